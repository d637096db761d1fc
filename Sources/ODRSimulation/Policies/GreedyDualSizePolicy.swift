import ODRRuntime

/// Greedy-Dual-Size-Frequency: each pack holds a credit `L + uses × cost / size`, where the cost is
/// the time to download it again (latency plus bytes over bandwidth) and `L` rises to the credit of
/// each pack evicted. Small packs, which cost latency out of proportion to their size, and packs used
/// often stay; large packs used once go first.
public struct GreedyDualSizePolicy: EvictionPolicy {
    /// Download cost per installed byte, by pack.
    private let costPerByte: [Double]
    private var credit: [Double]
    private var uses: [Double]
    private var inflation = 0.0

    /// Creates the policy for `catalog`, costing downloads on `device`'s network.
    public init(catalog: SimulatedCatalog, device: DeviceSettings) {
        costPerByte = catalog.packs.map { pack in
            (device.latency + Double(pack.downloadBytes) / device.bandwidth) / Double(max(pack.bytes, 1))
        }
        credit = Array(repeating: 0, count: catalog.packs.count)
        uses = Array(repeating: 0, count: catalog.packs.count)
    }

    public var name: String { "gds" }

    public mutating func didAccess(_ pack: PackIndex, access: Int, time: Double) {
        uses[pack.index] += 1
        credit[pack.index] = inflation + uses[pack.index] * costPerByte[pack.index]
    }

    public mutating func plan(_ candidates: PurgeCandidates, bytesNeeded: Int64) -> PurgePlan {
        let order = candidates.all().sorted {
            (credit[$0.id], $0.lastUse, $0.id) < (credit[$1.id], $1.lastUse, $1.id)
        }
        let plan = PurgePlan(takingInOrder: order, bytesNeeded: bytesNeeded, reason: .lowestCredit)
        for deletion in plan.deletions {
            inflation = max(inflation, credit[deletion.id])
            uses[deletion.id] = 0
        }
        return plan
    }
}
