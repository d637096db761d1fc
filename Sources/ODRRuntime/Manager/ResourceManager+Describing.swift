#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

extension ResourceManager {
    /// Makes the catalog describe `tags`, fetching what it needs of a split catalog (format 3).
    ///
    /// A split catalog's client describes only the tags it uses: those its initial-install and
    /// prefetch lists name and those it held before. A request's begin describes its tags first, so
    /// most apps never call this; call it before the synchronous queries (``downloadSize(forTags:)``,
    /// ``anticipate(tags:likelihood:)``, ``prefetch(tags:priority:)``, preservation priorities) for a
    /// tag no request used yet: they throw `catalog-unavailable` for it until then. For a whole
    /// manifest, or tags already described, it returns at once.
    ///
    /// Fetches the bins of the tags and the file tables of their packs (each only when the store's
    /// cache does not hold it), checks each against its pin and stores them; requests in progress
    /// keep what they hold.
    ///
    /// - Throws: ``ResourceError`` `invalid-tag` for a tag the catalog's version does not define;
    ///   `catalog-unavailable` before ``prepare(online:)``; `integrity`, `invalid-catalog` and
    ///   transfer errors as ``CatalogClient/describe(_:in:)`` throws them.
    public func describe(tags: Set<String>) async throws(ResourceError) {
        for _ in 0..<CatalogClient.scopeAttempts {
            let snapshot = try state.withLock { state throws(ResourceError) in try Self.requireSnapshot(state) }
            guard !snapshot.describesAll(tags) else { return }
            adoptDescribed(try await client.describe(tags, in: snapshot))
        }
        let snapshot = try state.withLock { state throws(ResourceError) in try Self.requireSnapshot(state) }
        if let tag = tags.sorted().first(where: { !snapshot.describes(tag: $0) }) { throw snapshot.undescribed(tag) }
    }

    /// The current version as the manager uses it now: for a split catalog, with every tag
    /// described so far. `nil` before the catalog is loaded.
    public var currentSnapshot: CatalogSnapshot? { state.withLock { $0.snapshot } }

    /// Whether ``describe(tags:)`` would fetch anything for `tags`.
    func needsDescription(of tags: Set<String>) -> Bool {
        state.withLock { state in state.snapshot.map { !$0.describesAll(tags) } ?? false }
    }

    /// Makes `described`, a larger description of the current version, current: requests keep the
    /// tags they hold (the ledger's counts move over). Ignored when the version changed meanwhile,
    /// or another description that does not list the current one's tags first got there before.
    func adoptDescribed(_ described: CatalogSnapshot) {
        guard let catalog = try? LedgerCatalog(manifest: described.lookup) else { return }
        state.withLock { state in
            guard let current = state.snapshot, current.version == described.version, current.catalogURL == described.catalogURL,
                  current.index.id == described.index.id,
                  described.manifest.tags.count > current.manifest.tags.count,
                  let ledger = state.ledger?.carried(to: catalog) else { return }
            state.snapshot = described
            state.ledger = ledger
            state.installed = catalog.packIDs.map { state.installedIDs.contains($0) }
        }
    }
}

extension CatalogSnapshot {
    /// Whether every one of `tags` is described (see ``split``).
    func describesAll(_ tags: some Sequence<String>) -> Bool {
        split == nil || tags.allSatisfy(describes(tag:))
    }
}
