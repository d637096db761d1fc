/// The simulated device: its disk, the other apps sharing it, the runtime's limits, and its network.
public struct DeviceSettings: Sendable, Equatable, Codable {
    /// The disk's capacity in bytes.
    public var diskCapacity: Int64 = 8 << 30
    /// The bytes other apps use on average.
    public var otherAppsBytes: Int64 = 4 << 30
    /// How far other apps' use wanders from the average, either way.
    public var otherAppsSwing: Int64 = 1 << 30
    /// How often, on average, other apps' use changes, in seconds.
    public var otherAppsInterval: Double = 6 * 3600
    /// The most bytes the store may hold (the manager's cache budget); `nil` for no budget.
    public var cacheBudget: Int64?
    /// The runtime purges to keep at least this much of the disk free.
    public var freeSpaceWatermark: Int64 = 256 << 20
    /// The most installed bytes that may be in use at once.
    public var inUseLimit: Int64 = 2 << 30
    /// Download rate in bytes per second.
    public var bandwidth: Double = 5_000_000
    /// Seconds before each download starts moving bytes.
    public var latency: Double = 0.15
    /// The chance, each day, of an offline period of one to six hours.
    public var offlineProbability: Double = 0

    public init() {}

    /// A device whose other apps take about half of a disk of `capacity`, give or take an eighth.
    public init(diskCapacity capacity: Int64) {
        diskCapacity = capacity
        otherAppsBytes = capacity / 2
        otherAppsSwing = capacity / 8
    }
}
