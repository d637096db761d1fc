import ODRFormat
import ODRRuntime

/// Limited prediction: a player walks a grid of regions (the catalog's tags, row by row), holding the
/// region they are in (urgent) and its eight neighbours (prefetched), keeping their heading most of
/// the time and sometimes fast-travelling, mostly to a town: a hub (``SimulatedCatalog/hubTags``).
/// Sessions begin in a town. Players come back to towns, which is why the developer gave them a
/// higher preservation priority.
public struct OpenWorldWorkload: Sendable {
    /// The grid's width in regions.
    public var columns: Int
    /// The chance of keeping the same heading at each step.
    public var momentum = 0.7
    /// The chance that a step is a fast travel.
    public var fastTravelProbability = 0.05
    /// The share of fast travels that go to a town (a hub, when there is one) rather than to any
    /// region.
    public var townShare = 0.8
    /// The share of play sessions that begin in a town (a hub, when there is one: the game loads
    /// at an inn or a save point) rather than where the last one ended.
    public var sessionStartInTownShare = 1.0
    /// The median time spent in a region, in seconds.
    public var medianStepTime: Double = 3 * 60

    public init(columns: Int) { self.columns = max(1, columns) }

    func generate(into script: inout ScriptBuilder, days: Double, maxRequests: Int, random: inout SimulationRandom) {
        let regions = script.catalog.tags.count
        guard regions > 0 else { return }
        let rows = (regions + columns - 1) / columns
        let towns = script.catalog.hubTags.map(\.index)
        var position = Int(random.next() % UInt64(regions))
        var heading = (dx: 1, dy: 0)
        for session in PlaySessions.schedule(days: days, random: &random) {
            var t = session.lowerBound
            if !towns.isEmpty, random.chance(sessionStartInTownShare) {
                position = towns[Int(random.next() % UInt64(towns.count))]
            }
            var current: Int32?
            var held: [Int: Int32] = [:]
            while t < session.upperBound, script.requestCount < maxRequests {
                let here = script.begin([TagIndex(position)], at: t, urgent: true)
                if let previous = current { script.end(previous, at: t) }
                current = here
                let wanted = Set(neighbourhood(of: position, rows: rows, regions: regions))
                for (region, request) in held.sorted(by: { $0.key < $1.key }) where !wanted.contains(region) {
                    script.end(request, at: t)
                    held[region] = nil
                }
                for region in wanted.sorted() where held[region] == nil {
                    held[region] = script.begin([TagIndex(region)], at: t + 1, urgent: false)
                }
                t += min(max(random.logNormal(median: medianStepTime, sigma: 0.6), 20), session.upperBound - t + 1)
                if random.chance(fastTravelProbability) {
                    position = !towns.isEmpty && random.chance(townShare)
                        ? towns[Int(random.next() % UInt64(towns.count))]
                        : Int(random.next() % UInt64(regions))
                    continue
                }
                if !random.chance(momentum) {
                    heading = [(1, 0), (-1, 0), (0, 1), (0, -1)][Int(random.next() % 4)]
                }
                let x = position % columns + heading.dx
                let y = position / columns + heading.dy
                if (0 ..< columns).contains(x), (0 ..< rows).contains(y), y * columns + x < regions {
                    position = y * columns + x
                } else {
                    heading = (-heading.dx, -heading.dy)
                }
            }
            if let previous = current { script.end(previous, at: t) }
            for (_, request) in held.sorted(by: { $0.key < $1.key }) { script.end(request, at: t) }
        }
    }

    /// The regions around `position` (not itself) that exist.
    private func neighbourhood(of position: Int, rows: Int, regions: Int) -> [Int] {
        let x = position % columns, y = position / columns
        var result: [Int] = []
        for dy in -1 ... 1 {
            for dx in -1 ... 1 where dx != 0 || dy != 0 {
                let nx = x + dx, ny = y + dy
                if (0 ..< columns).contains(nx), (0 ..< rows).contains(ny), ny * columns + nx < regions {
                    result.append(ny * columns + nx)
                }
            }
        }
        return result
    }
}
