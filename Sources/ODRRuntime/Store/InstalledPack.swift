#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif

/// A pack the store knows about: what it weighs, when it was installed and used, and its state.
public struct InstalledPack: Sendable, Hashable, Codable {
    /// The store's row number; the purge planner's candidate id.
    public var number: Int
    /// The pack id (SHA-256 of its archive).
    public var id: String
    /// The archive's size: what downloading it cost.
    public var archiveBytes: Int64
    /// The installed files' size: what deleting it frees.
    public var installedBytes: Int64
    /// When it was installed, in seconds since 1970.
    public var installedAt: Double
    /// When a request last used it, in seconds since 1970.
    public var lastUsedAt: Double
    /// How many requests began using it, across purges and reinstalls (0 for a pack installed
    /// but not used yet); the purge planner keeps packs used often longer.
    public var useCount: Int
    /// Whether `packs/<id>/` holds it, complete and verified.
    public var isInstalled: Bool
    /// Whether no followed catalog's current version needs it: a first candidate for purging.
    public var isSuperseded: Bool

    /// Describes one pack row of the store.
    public init(number: Int, id: String, archiveBytes: Int64, installedBytes: Int64, installedAt: Double,
                lastUsedAt: Double, isInstalled: Bool, isSuperseded: Bool, useCount: Int = 1) {
        self.number = number
        self.id = id
        self.archiveBytes = archiveBytes
        self.installedBytes = installedBytes
        self.installedAt = installedAt
        self.lastUsedAt = lastUsedAt
        self.useCount = useCount
        self.isInstalled = isInstalled
        self.isSuperseded = isSuperseded
    }
}
