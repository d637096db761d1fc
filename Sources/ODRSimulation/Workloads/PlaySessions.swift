import ODRFormat

/// When a player plays: one to three sessions a day between 8:00 and midnight, about 40 minutes
/// each, separated by idle time.
struct PlaySessions {
    /// The sessions over `days`, in order, not overlapping.
    static func schedule(days: Double, random: inout SimulationRandom) -> [Range<Double>] {
        var sessions: [Range<Double>] = []
        for day in 0 ..< Int(days.rounded(.up)) {
            let count = 1 + Int(random.next() % 3)
            let starts = (0 ..< count).map { _ in Double(day) * 86_400 + random.uniform(8 ... 23) * 3600 }.sorted()
            for (i, start) in starts.enumerated() {
                let limit = i + 1 < starts.count ? starts[i + 1] - 60 : Double(day + 1) * 86_400
                let length = min(random.logNormal(median: 40 * 60, sigma: 0.5), limit - start)
                if length > 60, start < days * 86_400 { sessions.append(start ..< start + length) }
            }
        }
        return sessions
    }
}
