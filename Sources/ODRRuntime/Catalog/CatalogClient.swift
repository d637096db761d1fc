#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Keeps a store's copy of one catalog current: `catalog.json` by conditional GET, with rollback
/// protection, and the manifest of the followed distribution's version, checked against the
/// SHA-256 and size the catalog pins. With trusted keys (``trust``), only a signed, unexpired
/// `catalog.json` is accepted (docs/SECURITY.md).
///
/// Everything accepted is stored, so ``storedSnapshot()`` gives an app what it needs to start and
/// use its installed packs with no network at all.
///
/// ```swift
/// let client = CatalogClient(catalogURL: URL(string: "https://cdn.example.com/game/")!, store: store,
///                            transport: try TransferEngine())
/// let snapshot = try await client.snapshot()        // online if possible, else the stored copy
/// let packs = try snapshot.packs(forTags: ["level3"])
/// ```
public struct CatalogClient: Sendable {
    /// The catalog's base URL (the directory of `catalog.json`), ending in `/`.
    public let catalogURL: URL
    /// The distribution followed (`live` by default).
    public let distribution: String
    /// A catalog directory shipped with the app: its `catalog.json` and manifest serve until the
    /// first online check, and its packs install from disk.
    public let bundledCatalog: URL?
    /// The store that keeps the accepted catalog and manifests, so they serve offline.
    public let store: ResourceStore
    /// What fetches `catalog.json` and manifests: a ``TransferEngine`` in an app, a stand-in in tests.
    public let transport: any Transport
    /// The keys the catalog must be signed by (none: any well-formed catalog) and the size limits.
    public let trust: CatalogTrust
    /// The device's choice of variants: every snapshot's ``CatalogSnapshot/lookup`` resolves it.
    public let variants: VariantPreferences
    /// The origins serving the catalog when there are several (``catalogURL`` should be the
    /// first): `catalog.json` and manifests come from the first that answers. `nil` asks
    /// ``catalogURL`` only.
    public var origins: OriginSet?
    /// Whether an unsigned `catalog.json` is accepted from an origin other than the primary
    /// (default `false`: without trusted keys, only the primary is believed). A signed catalog is
    /// accepted from any origin, with the same checks.
    public var allowsUnsignedCatalogFromMirrors = false
    /// The id of the catalog the app means (`nil`: any). Online, a `catalog.json` of another id is
    /// refused; offline, a store opened with URLs it has not seen serving a catalog uses the stored
    /// catalog of this id (docs/STORE.md, "Catalogs and their origins").
    public var catalogID: String?
    /// Called with the file (`catalog.json`, a manifest's path) each time its download moves to
    /// another origin.
    public var originSwitched: (@Sendable (String, TransferOriginSwitch) -> Void)?

    /// Creates a client for the catalog at `catalogURL`; nothing is fetched until ``snapshot(online:)``.
    public init(catalogURL: URL, distribution: String = "live", store: ResourceStore, transport: any Transport,
                bundledCatalog: URL? = nil, trust: CatalogTrust = CatalogTrust(), variants: VariantPreferences = VariantPreferences()) {
        self.catalogURL = CatalogLocation.base(catalogURL)
        self.distribution = distribution
        self.store = store
        self.transport = transport
        self.bundledCatalog = bundledCatalog
        self.trust = trust
        self.variants = variants
    }

    /// Checks the catalog online and stores what changed.
    ///
    /// - Returns: the snapshot of the distribution's current version.
    /// - Throws: ``ResourceError``: transfer errors; `catalog-rollback` for a serial lower than the
    ///   highest seen; `invalid-catalog` for a malformed file, a missing distribution, a catalog
    ///   whose id changed, or a body over the size limit, or split metadata (format 3) that is not
    ///   valid; `integrity` for a manifest that differs from the catalog's pin, or a tag bin or file
    ///   table that differs from the pin its manifest or bin gives; with trusted keys,
    ///   `untrusted-catalog` and `catalog-expired`. Nothing is stored when it throws, but the bins
    ///   and tables that were fetched and matched their pins stay in the store's metadata cache.
    ///
    /// For a split manifest (`odrpack build`'s default), only the part of the version this
    /// store uses is fetched: the bins and tables of its initial-install and prefetch tags, of the
    /// tags the current version's part describes and of the packs installed from it; each file
    /// only when the store's metadata cache does not hold it already, so an update moves only the
    /// metadata files whose pin changed. Other tags are described when a request needs them
    /// (``describe(_:in:)``; docs/STORE.md, "The metadata cache of split catalogs").
    public func refresh() async throws(ResourceError) -> CatalogSnapshot {
        let before = (try? store.followedCatalog(url: catalogURL))?.flatMap { $0.distribution == distribution ? $0.currentVersion : nil }
        // The log is a record, not a condition of the check: a failed write loses only the line.
        func log(_ reason: String) {
            try? store.log(.catalog, CatalogIndex.fileName, bytes: 0, reason: reason, doing: "log a catalog change")
        }
        do throws(ResourceError) {
            let snapshot = try await refreshUnlogged()
            if before != snapshot.version {
                let change = before.map { "version \($0) -> \(snapshot.version)" } ?? "followed: version \(snapshot.version)"
                log("\(change) (serial \(snapshot.index.serial), distribution \(distribution))")
            }
            return snapshot
        } catch where Self.refusals.contains(error.code) {
            log("refused: error[\(error.code.rawValue)] \(error.message.prefix(200))")
            throw error
        }
    }

    /// The errors that mean a `catalog.json` (or its manifest) was refused, not that the server
    /// could not be reached: each gets a `catalog` line in the store's log.
    static let refusals: Set<ResourceError.Code> = [.catalogRollback, .catalogExpired, .untrustedCatalog, .invalidCatalog, .integrity]

    /// The refusals that mean a stale `catalog.json` (older than the one stored, or expired): with
    /// a stored copy, ``snapshot(online:)`` goes on with it.
    static let staleRefusals: Set<ResourceError.Code> = [.catalogRollback, .catalogExpired]

    /// ``refresh()`` without its log lines.
    private func refreshUnlogged() async throws(ResourceError) -> CatalogSnapshot {
        let followed = try store.followedCatalog(url: catalogURL)
        // A primary URL not seen yet continues the catalog a mirror served or the app names: its id
        // is expected and its validators are sent. (A catalog id the store does not hold yet is
        // simply expected of the answer.)
        var expected = followed
        if expected == nil, let stored = try store.storedCatalogURL(origins: mirrors, catalogID: catalogID, orOnlyCatalog: false) {
            expected = try store.followedCatalog(url: stored)
        }
        var request = originRequest(for: CatalogIndex.fileName)
        // A server that refuses connections is not retried: snapshot() falls back to the stored copy at once.
        request.retriesUnreachableServer = false
        if let expected, expected.index != nil, expected.distribution == distribution { request.conditional = expected.validators }
        let sink = DataSink(limit: trust.maximumCatalogBytes, file: CatalogIndex.fileName)
        let result: TransferResult
        do {
            result = try await transport.download(request, into: sink)
        } catch where error.code == .resourceUnavailable || error.code == .accessDenied {
            // The server answered: say what it said about which URL, since no stored copy stands in.
            let status = (error.cause as? HTTPStatusError).map { "HTTP \($0.status)" } ?? error.code.rawValue
            let what = error.code == .accessDenied ? "refuses access to" : "has no"
            throw ResourceError(error.code, "The server \(what) \(request.url.absoluteString) (\(status)). Check the catalog URL and that the catalog is published there\(error.code == .accessDenied ? ", and the credentials" : "").",
                                url: request.url, cause: error.cause)
        }
        let index: CatalogIndex
        if result.outcome == .notModified, let stored = expected?.index {
            index = stored
        } else {
            index = try decodeIndex(sink.data)
            try requireTrustedOrigin(of: result, signed: trust.requiresSignatures)
        }
        // Trust is kept per catalog id for the whole store: another URL of the same catalog has
        // raised the serial and followed rotations for this one too.
        let trusted = try store.catalogTrust(catalogID: index.id)
        // Checked before the serial, so an unsigned catalog with a huge serial cannot even raise it.
        var keySet: TrustedKeySet?
        if trust.requiresSignatures {
            keySet = try trust.verify(index, stored: trusted?.keySet ?? followed?.keySet, now: now, allowExpired: false, url: catalogURL)
            // A catalog is its id and the keys that sign it: one signed by none of the keys the
            // store follows for this id (and not a rotation from them) is another catalog.
            if let held = trusted?.keySet, let signer = keySet, signer.version <= held.version,
               Set(signer.keys).isDisjoint(with: held.keys) {
                throw ResourceError(.untrustedCatalog, "catalog.json of '\(index.id)' is signed with other keys than the catalog '\(index.id)' this store holds: two catalogs with one id. Keep the other catalog in another store directory, or give it its own catalogID in odr.json.",
                                    url: catalogURL)
            }
        }
        let highest = max(trusted?.highestSerial ?? -1, followed?.highestSerial ?? -1)
        guard index.serial >= highest else {
            throw Self.rollbackError(serial: index.serial, highest: highest, url: catalogURL)
        }
        let served = result.servedBy.map(CatalogLocation.base) ?? catalogURL
        if let known = [expected?.index?.id, catalogID].compactMap({ $0 }).first(where: { $0 != index.id }) {
            throw ResourceError(.invalidCatalog, "\(served.absoluteString) serves catalog '\(index.id)', but this store follows catalog '\(known)' there. Check the URL and mirrors, or use a new store for a different catalog.",
                                url: served)
        }
        if followed == nil || served != catalogURL {
            // Both the app's name for the catalog and the origin that answered now reach it.
            try store.recordOrigins([catalogURL, served], servingCatalog: index.id)
        }
        let version = try currentVersion(of: index)
        let accepted = FollowedCatalog(url: catalogURL, distribution: distribution, validators: result.validators,
                                       highestSerial: max(index.serial, highest),
                                       index: index, currentVersion: version, keySet: keySet)
        let stored = try store.manifest(catalogURL: catalogURL, version: version)
        let storedSplit = stored == nil ? nil : try store.splitManifest(catalogURL: catalogURL, version: version)
        let storedWhole = stored != nil && storedSplit == nil ? !(try store.hasMetadataFiles(catalogURL: catalogURL, version: version)) : false
        if let stored, storedSplit != nil || storedWhole {
            // A manifest the store holds (with its pack rows) is not stored again: encoding a
            // 100,000-file manifest to JSON only to have the insert ignore it cost every check a second.
            let snapshot = CatalogSnapshot(catalogURL: catalogURL, index: index, manifest: stored, variants: variants, split: storedSplit)
            try store.commitCatalog(accepted, manifest: nil)
            return snapshot
        }
        var previous = stored
        for _ in 0..<Self.scopeAttempts {
            let (manifest, metadataFiles, split, carried) = try await fetchManifest(version: version, index: index, previous: previous)
            let snapshot = CatalogSnapshot(catalogURL: catalogURL, index: index, manifest: manifest, variants: variants, split: split)
            do {
                try store.commitCatalog(accepted, manifest: snapshot.lookup, metadataFiles: metadataFiles, scoped: split != nil,
                                        entriesChecked: carried)
                return snapshot
            } catch where error.cause is ResourceStore.ScopeChanged {
                // Another process stored a part of this version with other tags: take them in too.
                previous = try store.manifest(catalogURL: catalogURL, version: version)
            }
        }
        throw ResourceError(.storageFailure, "Other processes kept storing other parts of version \(version) of the catalog; try again.", url: catalogURL)
    }

    /// How often storing a part of a split version is tried while other processes store other parts.
    ///
    /// An attempt fails only when another process stored, meanwhile, a part with a tag this one's
    /// lacks; the next attempt takes the union. The stored part only grows (within the version's
    /// tags), so every failed attempt is another process's progress and the attempts end; the bound
    /// is there for a store whose processes keep adding tags faster than this one can assemble them.
    /// Four, as it was, was too few for four processes beginning tags of one version at once: the
    /// soak test saw it run out.
    static let scopeAttempts = 64

    /// A snapshot of the same version as `snapshot` that also describes `tags`: for a split
    /// catalog (format 3) whose stored part does not describe them yet, their bins and the tables
    /// of their packs are fetched (each only when the store's cache does not hold it), checked
    /// against their pins, and stored with the rest of the version's part. Tags another process
    /// added to the stored part come along. A whole manifest already describes every tag.
    ///
    /// - Throws: ``ResourceError`` `invalid-tag` naming a tag the version does not define (its bin
    ///   does not hold it); `integrity` for a bin or table that differs from its pin (the files
    ///   fetched before it stay cached, so the next attempt fetches only what is missing);
    ///   `invalid-catalog` for metadata that is not valid; transfer errors.
    public func describe(_ tags: Set<String>, in snapshot: CatalogSnapshot) async throws(ResourceError) -> CatalogSnapshot {
        guard tags.contains(where: { snapshot.lookup.tag(named: $0) == nil }) else { return snapshot }
        var split = snapshot.split
        // A stored part of a split version whose cached split manifest was damaged (and dropped):
        // fetched again now, rather than calling a tag outside the part unknown.
        if split == nil, try store.hasMetadataFiles(catalogURL: catalogURL, version: snapshot.version) {
            split = try await refetchSplitManifest(version: snapshot.version, index: snapshot.index)
        }
        guard let split else { return snapshot }
        for _ in 0..<Self.scopeAttempts {
            let stored = try store.manifest(catalogURL: catalogURL, version: snapshot.version)
            let known = Set(snapshot.manifest.tags.map(\.name))
            let others = (stored?.tags.map(\.name) ?? []).filter { !known.contains($0) }
            let scope = try await self.scope(of: split, tags: others + tags.sorted(), previous: snapshot.manifest)
            if let unknown = scope.unknownTags.first(where: tags.contains) {
                let sample = scope.manifest.tags.map(\.name).prefix(12).joined(separator: ", ")
                throw ResourceError(.invalidTag, "The catalog's version \(snapshot.version) has no tag '\(unknown)'. Check the spelling, or rebuild the catalog with a rule for it. Tags this device uses: \(sample).",
                                    url: catalogURL)
            }
            var next = CatalogSnapshot(catalogURL: catalogURL, index: snapshot.index, manifest: scope.manifest, variants: variants, split: split)
            next.fallback = snapshot.fallback
            next.isExpired = snapshot.isExpired
            do {
                try store.commitScope(catalogURL: catalogURL, manifest: next.lookup, metadataFiles: scope.files.map(\.path))
                return next
            } catch where error.cause is ResourceStore.ScopeChanged {
                continue
            }
        }
        throw ResourceError(.storageFailure, "Other processes kept storing other parts of version \(snapshot.version) of the catalog; try again.", url: catalogURL)
    }

    /// The snapshot stored by the last successful ``refresh()``, else the bundled catalog's, else `nil`.
    ///
    /// With trusted keys, the stored `catalog.json` is checked against them again; once past its
    /// `expires` time it still serves (installed packs stay usable offline) but is marked
    /// ``CatalogSnapshot/isExpired``, and installers refuse to download from it.
    ///
    /// - Throws: `untrusted-catalog` when the stored copy is not signed by the trusted keys (a
    ///   store filled before the app trusted keys): check online to replace it.
    public func storedSnapshot() throws(ResourceError) -> CatalogSnapshot? {
        if let storedURL = try storedCatalogURL(), let followed = try store.followedCatalog(url: storedURL), followed.distribution == distribution,
           let index = followed.index, let version = followed.currentVersion,
           let manifest = try store.manifest(catalogURL: storedURL, version: version) {
            var snapshot = CatalogSnapshot(catalogURL: catalogURL, index: index, manifest: manifest, variants: variants,
                                           split: try store.splitManifest(catalogURL: storedURL, version: version))
            if trust.requiresSignatures {
                _ = try trust.verify(index, stored: followed.keySet, now: now, allowExpired: true, url: catalogURL)
                snapshot.isExpired = index.expiryDate.map { $0 <= now } ?? false
            }
            return snapshot
        }
        guard let bundledCatalog else { return nil }
        do {
            let index = try CatalogIndex.decode(from: Data(contentsOf: bundledCatalog.appending(path: CatalogIndex.fileName)))
            let version = try currentVersion(of: index)
            guard let entry = index.version(version) else { return nil }
            let manifest: VersionManifest
            switch try PublishedManifest.decode(from: Data(contentsOf: bundledCatalog.appending(path: entry.manifest))) {
            case .full(let full): manifest = full
            case .split(let split):
                // A bundled split catalog: its bins and tables are files beside it, checked against their pins.
                manifest = try SplitMetadata.assemble(split) { path in
                    guard RelativePath.problem(inCatalogPath: path) == nil else {
                        throw FormatError(.invalidPath, "'\(path)' is not a path inside the catalog.", field: path)
                    }
                    return try Data(contentsOf: bundledCatalog.appending(path: path))
                }
            }
            return CatalogSnapshot(catalogURL: catalogURL, index: index, manifest: manifest, variants: variants)
        } catch let error as ResourceError {
            throw error
        } catch {
            throw ResourceError(.invalidCatalog, "The bundled catalog at '\(bundledCatalog.path)' cannot be read; rebuild it with odrpack.",
                                url: bundledCatalog, cause: StoreFailure(description: "\(error)"))
        }
    }

    /// The origins besides ``catalogURL``, in order.
    private var mirrors: [URL] { (origins?.origins ?? []).map(CatalogLocation.base).filter { $0 != catalogURL } }

    /// A URL that reaches this catalog's stored copy: ``catalogURL`` once it was seen serving it;
    /// else one of the mirrors that was, the stored catalog ``catalogID`` names, or the only one
    /// the store holds (see ``ResourceStore/storedCatalogURL(origins:catalogID:orOnlyCatalog:)``).
    /// `nil` when no rule chooses one, or the catalog chosen is not ``catalogID``.
    private func storedCatalogURL() throws(ResourceError) -> URL? {
        if let followed = try store.followedCatalog(url: catalogURL), catalogID == nil || followed.index?.id == catalogID { return catalogURL }
        return try store.storedCatalogURL(origins: [catalogURL] + mirrors, catalogID: catalogID)
    }

    /// Checks online when the network allows, and otherwise starts from the stored copy.
    ///
    /// Failures to reach the server fall back (no network, a refused connection, timeouts, server
    /// errors), and so does a stale `catalog.json`: one older than the stored copy
    /// (`catalog-rollback`) or expired (`catalog-expired`), which a cache or CDN edge serves after a
    /// publish. It is refused, logged, and the stored copy serves; the snapshot then says so
    /// (``CatalogSnapshot/fallback``). A catalog the server says is missing or forbidden (404, 403),
    /// or an invalid or untrusted one, is reported, never hidden behind the stored copy; so is a
    /// stale one when nothing is stored.
    ///
    /// - Parameter online: `false` skips the network entirely.
    public func snapshot(online: Bool = true) async throws(ResourceError) -> CatalogSnapshot {
        if online {
            do {
                return try await refresh()
            } catch where Self.isUnreachable(error) || Self.staleRefusals.contains(error.code) {
                if var stored = try storedSnapshot() {
                    stored.fallback = CatalogSnapshot.Fallback(reason: error, checkedAt: try store.followedCatalog(url: catalogURL)?.checkedAt)
                    return stored
                }
                if Self.staleRefusals.contains(error.code) { throw error }
                throw ResourceError(.catalogUnavailable, "The catalog was never fetched and the server cannot be reached: \(error.message)",
                                    url: catalogURL, cause: error)
            }
        }
        guard let stored = try storedSnapshot() else {
            let held = try store.storedCatalogIDs()
            let list = held.map { "'\($0)'" }.joined(separator: ", ")
            var advice = ""
            if let catalogID, !held.isEmpty {
                advice = " It holds no catalog '\(catalogID)' that these URLs may serve (it holds \(list)): check the catalog id and the URLs."
            } else if held.count > 1 {
                advice = " The store holds catalogs \(list), none served by these URLs: name the one to use by its catalog id (Configuration.catalogID, odr --catalog-id, ODR_OPT_CATALOG_ID)."
            }
            throw ResourceError(.catalogUnavailable, "The store has no copy of this catalog yet. Fetch it once with the network on.\(advice)",
                                url: catalogURL)
        }
        return stored
    }

    /// A request for `relative` in the catalog: on the primary, failing over to the other origins
    /// in their current order when there are several.
    private func originRequest(for relative: String) -> TransferRequest {
        // An unsigned catalog.json is believed only from the primary: ask it first even in back-off,
        // so a mirror's copy is taken (and refused) only when the primary fails now.
        let primaryFirst = relative == CatalogIndex.fileName && !trust.requiresSignatures && !allowsUnsignedCatalogFromMirrors
        guard let origins, origins.origins.count > 1,
              var request = origins.request(for: relative, priority: .urgent, primaryFirst: primaryFirst) else {
            return TransferRequest(url: CatalogLocation.url(of: relative, in: catalogURL), priority: .urgent)
        }
        let report = originSwitched
        request.originSwitched = { change in
            origins.markFailed(change.from)
            report?(relative, change)
        }
        return request
    }

    /// Refuses an unsigned `catalog.json` that an origin other than the primary served, unless
    /// ``allowsUnsignedCatalogFromMirrors``: without a signature, only the primary is believed.
    private func requireTrustedOrigin(of result: TransferResult, signed: Bool) throws(ResourceError) {
        guard let origins, let served = result.servedBy else { return }
        origins.markSucceeded(served)
        guard !signed, !allowsUnsignedCatalogFromMirrors, let index = origins.index(of: served), index != 0 else { return }
        throw ResourceError(.untrustedCatalog,
                            "catalog.json came from the mirror \(origins.origins[index].absoluteString) because the primary did not answer, and it is not signed, so nothing proves it is the published one. Sign the catalog (odrpack sign) and configure its public key, or allow unsigned catalogs from mirrors you control (allowsUnsignedCatalogFromMirrors, odr --allow-unsigned-mirrors).",
                            url: served, cause: UnsignedMirrorCatalog(mirror: origins.origins[index]))
    }

    /// Whether `error` means the published catalog could not be had (so the stored copy serves):
    /// no origin answered, or only a mirror whose unsigned catalog is not believed did.
    static func isUnreachable(_ error: ResourceError) -> Bool {
        [.networkUnavailable, .timedOut, .serverError, .untrustedServer].contains(error.code) || error.cause is UnsignedMirrorCatalog
    }

    static func rollbackError(serial: Int, highest: Int, url: URL) -> ResourceError {
        ResourceError(.catalogRollback,
                      "The server sent catalog serial \(serial), older than serial \(highest) already accepted; refusing to roll back. A stale cache or CDN is serving an old catalog.json.",
                      url: url)
    }

    /// The time expiry is measured against: the store's clock, which tests control.
    private var now: Date { Date(timeIntervalSince1970: store.clock()) }

    private func decodeIndex(_ data: Data) throws(ResourceError) -> CatalogIndex {
        do { return try CatalogIndex.decode(from: data) } catch {
            throw ResourceError(.invalidCatalog, "catalog.json is not valid: \(error.message)", url: catalogURL, cause: error)
        }
    }

    private func currentVersion(of index: CatalogIndex) throws(ResourceError) -> Int {
        guard let version = index.distributions[distribution], index.version(version) != nil else {
            let known = index.distributions.keys.sorted().joined(separator: ", ")
            throw ResourceError(.invalidCatalog, "The catalog has no distribution '\(distribution)'. It has: \(known).", url: catalogURL)
        }
        return version
    }

    /// The manifest of `version`, checked against the catalog's pin; for a split manifest (format
    /// 3) the part of it this store uses (``initialScope(of:current:)``) assembled from its bins
    /// and tables, with the paths of those metadata files and the split manifest itself.
    ///
    /// - Parameter previous: a part of this version stored before: its tags stay in the part.
    private func fetchManifest(version: Int, index: CatalogIndex, previous: VersionManifest?) async throws(ResourceError)
        -> (VersionManifest, [String], SplitManifest?, carried: Set<String>) {
        let (data, published) = try await fetchPublished(version: version, index: index)
        switch published {
        case .full(let manifest): return (manifest, [], nil, [])
        case .split(let split):
            let current = try currentPart()
            let carrying = current.split.flatMap { split in current.part.map { (manifest: split, part: $0) } }
            let scope = try await self.scope(of: split, tags: try initialScope(of: split, current: current), previous: previous,
                                             carrying: carrying)
            // Kept with the bins and tables: describing more tags later, offline too, starts from it.
            let head = ResourceStore.splitManifestPath(of: data)
            store.cacheMetadata(data, path: head)
            return (scope.manifest, scope.files.map(\.path) + [head], split, scope.carriedPacks)
        }
    }

    /// The split manifest of stored version `version` when the store's cached copy of it was
    /// damaged or removed (and dropped): fetched again, checked against the catalog's pin, and
    /// cached under the name the stored version records, so the version is whole again.
    private func refetchSplitManifest(version: Int, index: CatalogIndex) async throws(ResourceError) -> SplitManifest? {
        let (data, published) = try await fetchPublished(version: version, index: index)
        guard case .split(let split) = published else { return nil }
        store.cacheMetadata(data, path: ResourceStore.splitManifestPath(of: data))
        try? store.log(.repair, ResourceStore.splitManifestPath(of: data), bytes: Int64(data.count),
                       reason: "the cached split manifest of version \(version) was damaged or missing; fetched again", doing: "log a repair")
        return split
    }

    /// The manifest of `version` as published, checked against the catalog's pin, and its bytes.
    private func fetchPublished(version: Int, index: CatalogIndex) async throws(ResourceError) -> (Data, PublishedManifest) {
        let entry = index.version(version)
        let path = entry?.manifest ?? VersionManifest.manifestPath(forVersion: version)
        // Checked here too, whatever index it came from: only a path inside the catalog becomes a URL.
        if let problem = RelativePath.problem(inCatalogPath: path) {
            throw ResourceError(.invalidCatalog, "catalog.json names the manifest of version \(version) '\(path)': \(problem). Rebuild the catalog with odrpack.",
                                url: catalogURL)
        }
        let url = CatalogLocation.url(of: path, in: catalogURL)
        if trust.requiresSignatures, entry?.sha256 == nil {
            throw ResourceError(.untrustedCatalog, "The signed catalog.json does not pin version \(version)'s manifest (sha256 and size); rebuild or re-sign it with a current odrpack.",
                                url: url)
        }
        // A pinned manifest cannot be longer than its pin, so the download stops right there.
        let sink: DataSink
        if let size = entry?.size, size <= Int64(trust.maximumManifestBytes) {
            sink = DataSink(limit: Int(size), file: "\(path) (pinned at \(size) bytes)", code: .integrity)
        } else {
            sink = DataSink(limit: trust.maximumManifestBytes, file: path)
        }
        do {
            _ = try await transport.download(originRequest(for: path), into: sink)
        } catch where error.code == .resourceUnavailable {
            throw Self.metadataMissing("\(path), the manifest of version \(version) (catalog.json serial \(index.serial)),", error, url: url)
        }
        let data = sink.data
        if let sha256 = entry?.sha256, let size = entry?.size {
            let digest = ContentHash.sha256Hex(of: data)
            guard Int64(data.count) == size, digest == sha256 else {
                throw ResourceError(.integrity, "\(path) is \(data.count) bytes with SHA-256 \(digest.prefix(16))…, but catalog.json pins \(size) bytes with SHA-256 \(sha256.prefix(16))…. The server or a cache serves a manifest that is not the one published; nothing was installed.",
                                    url: url)
            }
        }
        let published: PublishedManifest
        do { published = try PublishedManifest.decode(from: data) } catch {
            throw ResourceError(.invalidCatalog, "The manifest of version \(version) is not valid: \(error.message)",
                                url: catalogURL, cause: error)
        }
        guard published.catalogID == index.id, published.version == version else {
            throw ResourceError(.invalidCatalog, "\(path) belongs to catalog '\(published.catalogID)' version \(published.version), not '\(index.id)' version \(version).",
                                url: catalogURL)
        }
        return (data, published)
    }

    /// The store's current version of this catalog as stored: its manifest (for a split version,
    /// the part of it the store holds) and its split manifest when it is split.
    private func currentPart() throws(ResourceError) -> (part: VersionManifest?, split: SplitManifest?) {
        guard let current = try store.followedCatalog(url: catalogURL)?.currentVersion,
              let part = try store.manifest(catalogURL: catalogURL, version: current) else { return (nil, nil) }
        return (part, try store.splitManifest(catalogURL: catalogURL, version: current))
    }

    /// The tags a new split version starts with: its initial-install and prefetch tags, every tag
    /// of the part of the current version this store uses, and the tags of the packs installed
    /// from it, so an update describes what the device holds and nothing else. An update takes
    /// from that part what did not change (``SplitMetadata/scoped(_:tags:keepingOrderOf:carrying:fetch:)``).
    private func initialScope(of split: SplitManifest, current: (part: VersionManifest?, split: SplitManifest?)) throws(ResourceError) -> [String] {
        var tags = split.initialInstallTags + split.prefetchOrder
        guard let previous = current.part else { return tags }
        if current.split != nil {
            tags += previous.tags.map(\.name)
        } else {
            let installed = try store.installedPackIDs()
            for pack in previous.packs where installed.contains(pack.id) { tags += pack.tags }
        }
        return tags
    }

    /// The part of split version `split` that `tags` use, with the metadata files it was assembled
    /// from: the bins of the tags first, then the tables of their packs, each from the store's
    /// cache when it holds it unchanged, else downloaded, ``metadataDownloads`` at a time.
    ///
    /// - Throws: `integrity` for a file that differs from its pin (nothing is kept of it; the files
    ///   fetched before it stay in the cache, so the next attempt fetches only what is missing);
    ///   `invalid-catalog` for bins and tables that are not valid; transfer errors.
    private func scope(of split: SplitManifest, tags: [String], previous: VersionManifest?,
                       carrying earlier: (manifest: SplitManifest, part: VersionManifest)? = nil) async throws(ResourceError) -> MetadataScope {
        let carried = SplitMetadata.carriedTags(of: split, from: earlier)
        let all = ((previous?.tags.map(\.name) ?? []) + tags).filter { carried[$0] == nil }
        let bins = try await metadataFiles(SplitMetadata.binFiles(forTags: all, of: split).map { ($0.path, $0.pin) }, version: split.version)
        do {
            let tables = try SplitMetadata.tableFiles(forTags: all, of: split, fetch: Self.lookUp(in: bins))
            let held = Int64(bins.values.reduce(0) { $0 + $1.count })
            let files = bins.merging(try await metadataFiles(tables.map { ($0.path, $0.pin) }, holding: held, version: split.version)) { first, _ in first }
            return try SplitMetadata.scoped(split, tags: tags, keepingOrderOf: previous, carrying: earlier, fetch: Self.lookUp(in: files))
        } catch let error as ResourceError {
            throw error
        } catch let error as FormatError {
            throw invalidMetadata(error, version: split.version)
        } catch {
            throw ResourceError(.invalidCatalog, "The metadata of version \(split.version) could not be assembled: \(error)", url: catalogURL,
                                cause: StoreFailure(description: "\(error)"))
        }
    }

    /// A `fetch` for the format's readers over metadata files already fetched.
    private static func lookUp(in files: [String: Data]) -> (String) throws -> Data {
        { path in
            guard let data = files[path] else {
                throw FormatError(.danglingReference, "\(path) is pinned by a bin, but was not fetched with it.", field: path)
            }
            return data
        }
    }

    /// How many metadata files download at once: a first fetch of a large catalog asks for hundreds.
    static let metadataDownloads = 8

    /// The bytes of each metadata file, exactly as its pin pins them: from the store's cache, else
    /// downloaded, ``metadataDownloads`` at a time. After a failure no other download starts, but
    /// those under way finish and are kept, so the next attempt fetches only what is missing.
    ///
    /// - Parameter held: the bytes of metadata files already held for the same request: with
    ///   these, the pins must fit ``SplitMetadata/maximumHeldBytes`` before anything is fetched.
    /// - Throws: `invalid-catalog` (cause `size-mismatch`, field `maximumHeldBytes`) over the
    ///   budget; the first download's error.
    private func metadataFiles(_ wanted: [(path: String, pin: MetadataPin)], holding held: Int64 = 0,
                               version: Int) async throws(ResourceError) -> [String: Data] {
        let pins = Dictionary(wanted.map { ($0.path, $0.pin) }, uniquingKeysWith: { first, _ in first }).values
        do { try SplitMetadata.checkBudget(pins, holding: held) } catch { throw invalidMetadata(error, version: version) }
        var result: [String: Data] = [:]
        var missing: [(path: String, pin: MetadataPin)] = []
        for file in wanted where result[file.path] == nil {
            if let cached = store.cachedMetadata(file.path, pin: file.pin) { result[file.path] = cached } else { missing.append(file) }
        }
        let (downloaded, failure) = await withTaskGroup(of: MetadataDownload.self) { group in
            var downloaded: [String: Data] = [:]
            var next = 0, running = 0, failure: ResourceError?
            while true {
                while failure == nil, next < missing.count, running < Self.metadataDownloads {
                    let file = missing[next]
                    next += 1
                    running += 1
                    group.addTask { await downloadMetadataOutcome(file.path, pin: file.pin) }
                }
                guard let outcome = await group.next() else { break }
                running -= 1
                if let data = outcome.data { downloaded[outcome.path] = data }
                if let error = outcome.error { failure = failure ?? error }
            }
            return (downloaded, failure)
        }
        if let failure { throw failure }
        return result.merging(downloaded) { first, _ in first }
    }

    /// What one download of ``metadataFiles(_:)`` brought: the bytes or the error.
    private struct MetadataDownload: Sendable {
        var path: String
        var data: Data?
        var error: ResourceError?
    }

    private func downloadMetadataOutcome(_ path: String, pin: MetadataPin) async -> MetadataDownload {
        do {
            return MetadataDownload(path: path, data: try await downloadMetadata(path, pin: pin))
        } catch {
            return MetadataDownload(path: path, error: error)
        }
    }

    /// Downloads metadata file `path` (never more than the pin's size), checks it against `pin`,
    /// and keeps it in the store's cache.
    private func downloadMetadata(_ path: String, pin: MetadataPin) async throws(ResourceError) -> Data {
        let url = CatalogLocation.url(of: path, in: catalogURL)
        let sink = DataSink(limit: Int(pin.size), file: "\(path) (pinned at \(pin.size) bytes)", code: .integrity)
        do {
            _ = try await transport.download(originRequest(for: path), into: sink)
        } catch where error.code == .resourceUnavailable {
            throw Self.metadataMissing("\(path), a metadata file of the catalog,", error, url: url)
        } catch where error.code == .integrity && error.url == nil {
            // Longer than its pin: cut off at the pin's size.
            throw ResourceError(.integrity, "\(error.message) The server or a cache serves a metadata file that is not the one published; nothing was installed.",
                                url: url, cause: error.cause)
        }
        do { try pin.check(sink.data, file: path) } catch {
            throw ResourceError(.integrity, "\(error.message) The server or a cache serves a metadata file that is not the one published; nothing was installed.",
                                url: url, cause: error)
        }
        store.cacheMetadata(sink.data, path: path)
        return sink.data
    }

    /// `resource-unavailable` for a manifest or metadata file `catalog.json` names that the server
    /// does not have, naming the file and the URL asked, and the usual cause.
    static func metadataMissing(_ what: String, _ error: ResourceError, url: URL) -> ResourceError {
        let asked = error.url ?? url
        let status = (error.cause as? HTTPStatusError).map { "HTTP \($0.status)" } ?? "missing"
        return ResourceError(.resourceUnavailable,
                             "\(what) is not on the server: \(asked.absoluteString) (\(status)). The catalog.json served names files that are not published: a stale cache or CDN edge may serve an old catalog.json after odrpack prune (wait for its max-age, or purge the edge's copy of catalog.json), or the catalog was published without them (odrpack publish uploads everything).",
                             url: asked, cause: error.cause)
    }

    private func invalidMetadata(_ error: FormatError, version: Int) -> ResourceError {
        ResourceError(.invalidCatalog, "The split metadata of version \(version) is not valid: \(error.message)", url: catalogURL, cause: error)
    }
}

/// The cause of the `untrusted-catalog` error for an unsigned catalog a mirror served.
struct UnsignedMirrorCatalog: Error, CustomStringConvertible, Sendable {
    var mirror: URL
    var description: String { "unsigned catalog.json from the mirror \(mirror.absoluteString)" }
}
