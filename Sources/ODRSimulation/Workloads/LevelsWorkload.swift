import ODRFormat
import ODRRuntime

/// Linear progression: the player plays the catalog's tags in order as levels, prefetching the next
/// level while the current one plays, in sessions separated by idle time, with occasional replays of
/// levels already finished. Replays favour the hubs (``SimulatedCatalog/hubTags``, the levels the
/// developer gave a higher preservation priority: boss fights, challenge levels).
public struct LevelsWorkload: Sendable {
    /// The chance that the next level played is a replay of a finished one.
    public var replayProbability = 0.1
    /// The share of replays that go to a finished hub level (when there is one); the rest pick any
    /// finished level.
    public var hubReplayShare = 0.5
    /// The median time to play a level, in seconds.
    public var medianLevelTime: Double = 12 * 60

    public init() {}

    func generate(into script: inout ScriptBuilder, days: Double, maxRequests: Int, random: inout SimulationRandom) {
        let levels = script.catalog.tags.count
        guard levels > 0 else { return }
        let hubs = script.catalog.hubTags.map(\.index)
        var progress = 0
        for session in PlaySessions.schedule(days: days, random: &random) {
            var t = session.lowerBound
            var prefetch: (request: Int32, level: Int)?
            while t < session.upperBound, script.requestCount < maxRequests {
                let level: Int
                if progress >= levels || (progress > 0 && random.chance(replayProbability)) {
                    let finishedHubs = hubs.prefix { $0 < progress }.count
                    if finishedHubs > 0, random.chance(hubReplayShare) {
                        level = hubs[Int(random.next() % UInt64(finishedHubs))]
                    } else {
                        level = Int(random.next() % UInt64(min(progress, levels)))
                    }
                } else {
                    level = progress
                    progress += 1
                }
                let playing = script.begin([TagIndex(level)], at: t, urgent: true)
                if let pending = prefetch {
                    script.end(pending.request, at: t)
                    prefetch = nil
                }
                if level + 1 < levels, level + 1 == progress {
                    prefetch = (script.begin([TagIndex(level + 1)], at: t + 5, urgent: false), level + 1)
                }
                let played = min(random.logNormal(median: medianLevelTime, sigma: 0.5), session.upperBound - t)
                t += max(played, 30)
                script.end(playing, at: t)
                t += 20
            }
            if let pending = prefetch { script.end(pending.request, at: t) }
        }
    }
}
