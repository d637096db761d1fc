@testable import ODRSimulation
import ODRRuntime

/// Small worlds whose every eviction can be worked out by hand.
enum SimulationFixtures {
    /// Tags `a`, `b`, `c`, ... each with one pack of `bytes` named `pack-a`, ...
    static func catalog(tags names: [String], bytes: Int64 = 100, priorities: [String: Double] = [:]) throws -> SimulatedCatalog {
        try SimulatedCatalog(
            name: "fixture",
            tags: names.map { .init(name: $0, preservationPriority: priorities[$0] ?? 0.5) },
            packs: names.indices.map { .init(id: "pack-\(names[$0])", bytes: bytes, downloadBytes: bytes, tags: [TagIndex($0)]) })
    }

    /// A device with a disk of `disk` bytes all for the store: no other apps, no watermark, a network
    /// fast enough that nothing stalls.
    static func device(disk: Int64) -> DeviceSettings {
        var device = DeviceSettings()
        device.diskCapacity = disk
        device.otherAppsBytes = 0
        device.otherAppsSwing = 0
        device.otherAppsInterval = 0
        device.freeSpaceWatermark = 0
        device.inUseLimit = .max
        device.bandwidth = 1e12
        device.latency = 0
        return device
    }

    /// One urgent request per tag in `sequence`, each ending before the next begins, a minute apart.
    static func script(_ catalog: SimulatedCatalog, playing sequence: [String]) throws -> SimulationScript {
        var builder = ScriptBuilder(catalog: catalog)
        for (i, name) in sequence.enumerated() {
            let request = builder.begin(try catalog.ledgerCatalog.tags(named: [name]), at: Double(i) * 60, urgent: true)
            builder.end(request, at: Double(i) * 60 + 30)
        }
        return builder.build(duration: Double(sequence.count) * 60)
    }

    /// Every policy `odrsim` compares, as the simulator runs them, for a script.
    static func runAll(_ script: SimulationScript, device: DeviceSettings) -> [String: SimulationResult] {
        var simulator = Simulator(script: script, device: device)
        simulator.logsPurges = true
        var results: [String: SimulationResult] = [:]
        for policy in PolicyChoice.allCases { results[policy.rawValue] = policy.run(on: simulator) }
        return results
    }

    /// A generated scenario small enough to run many times.
    static func generated(
        _ workload: Workload, seed: UInt64, days: Double = 10, packSize: SizeDistribution? = nil, tags: Int = 60,
        disk: Int64 = 6 << 30
    ) -> (SimulationScript, DeviceSettings) {
        var generator = workload.catalogGenerator(tagCount: tags)
        if let packSize {
            generator.packSize = packSize
            generator.sharedPackSize = packSize
        }
        let catalog = generator.generate(seed: seed)
        var device = DeviceSettings(diskCapacity: disk)
        device.inUseLimit = .max
        device.offlineProbability = 0.3
        return (workload.script(catalog: catalog, device: device, days: days, seed: seed), device)
    }
}
