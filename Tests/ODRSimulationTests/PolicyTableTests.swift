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

    // Measured (docs/ODRSIM.md): levels 1.10 (LRU 1.27), openworld 1.231 (LRU 1.230), travel 1.06
    // (LRU 1.09); with equal priorities the default policy is LRU with closest fit. A strict
    // priority rank (`priority-lru`, 3% over LRU on openworld seed 3) fails the openworld row,
    // plain LRU the levels row.
    static let rows: [Row] = [
        Row(workload: .levels, seed: 3, equalPriorities: false, maxRatioToBelady: 1.15, maxRatioToLRU: 0.90),
        Row(workload: .openworld, seed: 3, equalPriorities: false, maxRatioToBelady: 1.25, maxRatioToLRU: 1.005),
        Row(workload: .travel, seed: 3, equalPriorities: false, maxRatioToBelady: 1.08, maxRatioToLRU: 0.98),
        Row(workload: .levels, seed: 3, equalPriorities: true, maxRatioToBelady: 1.30, maxRatioToLRU: 1.0),
        Row(workload: .openworld, seed: 3, equalPriorities: true, maxRatioToBelady: 1.25, maxRatioToLRU: 1.0),
        Row(workload: .travel, seed: 3, equalPriorities: true, maxRatioToBelady: 1.12, maxRatioToLRU: 1.0),
    ]

    @Test(arguments: rows)
    func theDefaultPolicyStaysWithinItsBounds(_ row: Row) {
        let device = DeviceSettings(diskCapacity: 8 << 30)
        let catalog = row.workload.catalogGenerator().generate(seed: row.seed)
        var script = row.workload.script(catalog: catalog, device: device, days: 30, seed: row.seed)
        if row.equalPriorities { script = script.withEqualPriorities() }
        let simulator = Simulator(script: script, device: device)
        let belady = PolicyChoice.belady.run(on: simulator).metrics.bytesDownloaded
        let lru = PolicyChoice.lru.run(on: simulator).metrics.bytesDownloaded
        let standard = PolicyChoice.default.run(on: simulator).metrics.bytesDownloaded
        #expect(belady > 0)
        #expect(Double(standard) <= row.maxRatioToBelady * Double(belady), "default \(standard), belady \(belady)")
        #expect(Double(standard) <= row.maxRatioToLRU * Double(lru), "default \(standard), lru \(lru)")
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
