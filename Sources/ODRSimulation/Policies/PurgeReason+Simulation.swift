import ODRRuntime

extension PurgeReason {
    /// Greedy-Dual-Size: its credit (download cost per byte, refreshed by use) was the lowest.
    public static let lowestCredit = PurgeReason(rawValue: "lowest-credit")
    /// Belady's MIN: it is needed furthest in the future (or never again).
    public static let furthestNextUse = PurgeReason(rawValue: "furthest-next-use")
}
