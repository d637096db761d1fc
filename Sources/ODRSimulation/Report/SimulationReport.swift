import Foundation

/// The results of several policies on one scenario, with what is needed to reproduce them.
public struct SimulationReport: Sendable, Codable {
    /// What was simulated.
    public struct Scenario: Sendable, Codable, Equatable {
        /// `levels`, `openworld`, `travel` or `trace`.
        public var workload: String
        public var catalog: String
        public var tags: Int
        public var packs: Int
        public var catalogBytes: Int64
        public var days: Double
        public var seed: UInt64
        public var device: DeviceSettings

        public init(
            workload: String, catalog: SimulatedCatalog, days: Double, seed: UInt64, device: DeviceSettings
        ) {
            self.workload = workload
            self.catalog = catalog.name
            tags = catalog.tags.count
            packs = catalog.packs.count
            catalogBytes = catalog.totalBytes
            self.days = days
            self.seed = seed
            self.device = device
        }
    }

    public var scenario: Scenario
    /// One result per policy, in the order they ran.
    public var results: [SimulationResult]

    /// Collects `results`, filling in each one's ratio to Belady's MIN when it is among them.
    public init(scenario: Scenario, results: [SimulationResult]) {
        self.scenario = scenario
        self.results = results
        for i in self.results.indices { self.results[i].downloadRatioToBelady = downloadRatio(of: self.results[i]) }
    }

    /// Runs each of `policies` on `simulator` and collects the results.
    public init(scenario: Scenario, simulator: Simulator, policies: [PolicyChoice]) {
        self.init(scenario: scenario, results: policies.map { $0.run(on: simulator) })
    }

    /// Bytes `result` downloaded as a multiple of what Belady's MIN downloaded, when it ran.
    public func downloadRatio(of result: SimulationResult) -> Double? {
        guard let belady = results.first(where: { $0.policy == PolicyChoice.belady.rawValue }) else { return nil }
        let reference = belady.metrics.bytesDownloaded
        if reference == 0 { return result.metrics.bytesDownloaded == 0 ? 1 : nil }
        return Double(result.metrics.bytesDownloaded) / Double(reference)
    }

    /// The report as pretty-printed JSON with sorted keys.
    public func json(includingSamples: Bool = false) throws -> Data {
        var copy = self
        if !includingSamples {
            for i in copy.results.indices { copy.results[i].samples = [] }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(copy)
    }
}
