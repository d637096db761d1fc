/// What opening a store found left behind by a crash, and what it did about it.
public struct StoreRepairReport: Sendable, Hashable, Codable {
    /// Partial downloads kept in `staging/` because they can be resumed.
    public var keptPartialDownloads: [String] = []
    /// Other `staging/` leftovers that were deleted (half-unpacked folders, removed packs).
    public var removedStagingItems: [String] = []
    /// Folders in `packs/` without an installed row (a crash between rename and commit) that were deleted.
    public var removedPackFolders: [String] = []
    /// Packs recorded as installed whose folder was missing or incomplete; now recorded as not installed.
    public var packsMarkedNotInstalled: [String] = []
    /// Files in `manifests/` that no stored manifest names (a failed or interrupted write), deleted.
    public var removedManifestFiles: [String] = []
    /// Pack rows that broke the store's limits (changed outside the runtime), deleted, described;
    /// their packs install again on the next fetch (docs/STORE.md, "Tampering with the store").
    public var removedDamagedRows: [String] = []
    /// Whether every installed entry was checked (its size, without hashing). Opening a store that
    /// its last user closed cleanly checks only that each installed pack's folder exists; after a
    /// crash, or while another process has the store open, it checks every entry.
    public var checkedEveryEntry = true

    /// An empty report: nothing found, nothing done.
    public init() {}

    /// Whether the store was already clean.
    public var isEmpty: Bool {
        removedStagingItems.isEmpty && removedPackFolders.isEmpty && packsMarkedNotInstalled.isEmpty
            && removedManifestFiles.isEmpty && removedDamagedRows.isEmpty
    }
}
