@testable import ODRSimulation
import ODRRuntime
import Testing

/// The policy table of docs/ODRSIM.md as bounds: the default policy's downloaded bytes as a ratio
/// to Belady's MIN and to plain LRU on the built-in workloads (default settings, 30 days), with the
/// developer's priorities and with equal ones. A change to the planner or the workloads that makes
/// the default policy worse fails here.
struct PolicyTableTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var workload: Workload
        var seed: UInt64
        var equalPriorities: Bool
        /// The most the default policy may download, as a multiple of Belady's MIN.
        var maxRatioToBelady: Double
        /// The most it may download, as a multiple of plain LRU.
        var maxRatioToLRU: Double

        var testDescription: String { "\(workload) seed \(seed)\(equalPriorities ? " equal priorities" : "")" }
    }

    // Measured (docs/ODRSIM.md), default / Belady's and default / LRU: levels 1.097 and 0.864,
    // openworld 1.228 and 0.9978, travel 1.054 and 0.963; with equal priorities 1.236 and 0.974,
    // 1.225 and 0.9957, 1.071 and 0.979; openworld seed 1 1.206 and 0.9972, seed 2 with equal
    // priorities 1.229 and 0.9943 (the two rows the planner lost to LRU before it counted uses).
    // Every bound to LRU is below 1: the default policy must stay ahead of plain LRU on each row.
    static let rows: [Row] = [
        Row(workload: .levels, seed: 3, equalPriorities: false, maxRatioToBelady: 1.11, maxRatioToLRU: 0.875),
        Row(workload: .openworld, seed: 3, equalPriorities: false, maxRatioToBelady: 1.235, maxRatioToLRU: 0.999),
        Row(workload: .travel, seed: 3, equalPriorities: false, maxRatioToBelady: 1.065, maxRatioToLRU: 0.97),
        Row(workload: .levels, seed: 3, equalPriorities: true, maxRatioToBelady: 1.25, maxRatioToLRU: 0.985),
        Row(workload: .openworld, seed: 3, equalPriorities: true, maxRatioToBelady: 1.235, maxRatioToLRU: 0.998),
        Row(workload: .travel, seed: 3, equalPriorities: true, maxRatioToBelady: 1.08, maxRatioToLRU: 0.985),
        Row(workload: .openworld, seed: 1, equalPriorities: false, maxRatioToBelady: 1.215, maxRatioToLRU: 0.999),
        Row(workload: .openworld, seed: 2, equalPriorities: true, maxRatioToBelady: 1.235, maxRatioToLRU: 0.998),
    ]

    /// The row's workload with default settings: 30 days on an 8 GiB device.
    static func simulator(for row: Row) -> Simulator {
        let device = DeviceSettings(diskCapacity: 8 << 30)
        let catalog = row.workload.catalogGenerator().generate(seed: row.seed)
        var script = row.workload.script(catalog: catalog, device: device, days: 30, seed: row.seed)
        if row.equalPriorities { script = script.withEqualPriorities() }
        return Simulator(script: script, device: device)
    }

    @Test(arguments: rows)
    func theDefaultPolicyStaysWithinItsBounds(_ row: Row) {
        let simulator = Self.simulator(for: row)
        let belady = PolicyChoice.belady.run(on: simulator).metrics.bytesDownloaded
        let lru = PolicyChoice.lru.run(on: simulator).metrics.bytesDownloaded
        let standard = PolicyChoice.default.run(on: simulator).metrics.bytesDownloaded
        #expect(belady > 0)
        #expect(Double(standard) <= row.maxRatioToBelady * Double(belady), "default \(standard), belady \(belady)")
        #expect(Double(standard) <= row.maxRatioToLRU * Double(lru), "default \(standard), lru \(lru)")
    }

    @Test func thePlannerWithoutUseCountsFailsTheOpenworldBound() {
        // The bounds catch a regression: the planner before it counted uses downloaded 0.07% more
        // than plain LRU on openworld seed 3.
        let row = Self.rows[1]
        let simulator = Self.simulator(for: row)
        let lru = PolicyChoice.lru.run(on: simulator).metrics.bytesDownloaded
        let recencyOnly = simulator.run(RuntimePolicy(PurgePlanner(weighsUseCount: false))).metrics.bytesDownloaded
        #expect(Double(recencyOnly) > row.maxRatioToLRU * Double(lru), "without use counts \(recencyOnly), lru \(lru)")
    }

    @Test func hubsAreWhatTheWorkloadsComeBackTo() {
        // The developer's priorities mean something: per pack, hubs are asked for more often.
        for workload in Workload.allCases {
            let catalog = workload.catalogGenerator().generate(seed: 3)
            let script = workload.script(catalog: catalog, device: DeviceSettings(diskCapacity: 8 << 30), days: 30, seed: 3)
            let hubs = Set(catalog.hubTags)
            #expect(!hubs.isEmpty)
            var hubRequests = 0, otherRequests = 0
            for request in script.requests.indices where script.requests[request].isUrgent {
                for tag in script.tags(of: request) {
                    if hubs.contains(tag) { hubRequests += 1 } else { otherRequests += 1 }
                }
            }
            let perHub = Double(hubRequests) / Double(hubs.count)
            let perOther = Double(otherRequests) / Double(catalog.tags.count - hubs.count)
            #expect(perHub > 1.5 * perOther, "\(workload): \(perHub) urgent requests per hub, \(perOther) per other tag")
            // The equal-priority variant keeps the requests and drops the hints.
            let equal = script.withEqualPriorities()
            #expect(equal.events == script.events)
            #expect(equal.catalog.hubTags.isEmpty)
        }
    }
}
