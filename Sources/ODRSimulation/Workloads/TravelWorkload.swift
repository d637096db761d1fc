import Foundation
import ODRFormat
import ODRRuntime

/// Random access with Zipf popularity: a guide app whose user jumps between places (the catalog's
/// tags), often to a popular one, sometimes to the place next door. The hubs
/// (``SimulatedCatalog/hubTags``, the top sights the developer gave a higher preservation priority)
/// are the most popular places.
public struct TravelWorkload: Sendable {
    /// The Zipf exponent: 1 makes the most popular place twice as likely as the second.
    public var zipfExponent = 1.0
    /// The chance that the next place is a neighbour of the current one.
    public var nearbyProbability = 0.3
    /// The median time spent looking at a place, in seconds.
    public var medianVisitTime: Double = 4 * 60

    public init() {}

    func generate(into script: inout ScriptBuilder, days: Double, maxRequests: Int, random: inout SimulationRandom) {
        let places = script.catalog.tags.count
        guard places > 0 else { return }
        // Popularity is not aligned with catalog order: the most popular place is anywhere, but
        // the top sights (hubs) come first, in a random order, then the other places.
        let hubs = script.catalog.hubTags.map(\.index)
        let isHub = Set(hubs)
        var ranked = hubs
        ranked.shuffle(using: &random)
        var others = (0 ..< places).filter { !isHub.contains($0) }
        others.shuffle(using: &random)
        ranked += others
        var cumulative: [Double] = []
        cumulative.reserveCapacity(places)
        var total = 0.0
        for rank in 1 ... places {
            total += 1 / pow(Double(rank), zipfExponent)
            cumulative.append(total)
        }
        func popularPlace() -> Int {
            let target = random.unit() * total
            var low = 0, high = places - 1
            while low < high {
                let mid = (low + high) / 2
                if cumulative[mid] < target { low = mid + 1 } else { high = mid }
            }
            return ranked[low]
        }
        for session in PlaySessions.schedule(days: days, random: &random) {
            var t = session.lowerBound
            var place = popularPlace()
            while t < session.upperBound, script.requestCount < maxRequests {
                let visit = script.begin([TagIndex(place)], at: t, urgent: true)
                t += max(random.logNormal(median: medianVisitTime, sigma: 0.7), 10)
                script.end(visit, at: t)
                t += 15
                if random.chance(nearbyProbability) {
                    place = (place + (random.chance(0.5) ? 1 : places - 1)) % places
                } else {
                    place = popularPlace()
                }
            }
        }
    }
}
