#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ODRFormat

/// Where a tag stands in a store, as Xcode's on-demand resources gauge shows it.
public enum TagState: String, Sendable, Codable, Hashable {
    /// Some of its packs are neither installed nor downloading.
    case notDownloaded = "not downloaded"
    /// Some of its packs are being downloaded (by this or another process) or wait to be resumed.
    case downloading
    /// Every pack it needs is installed.
    case downloaded
    /// Downloaded, and requests hold it: a request of a running manager holds the tag, or
    /// requests in any process hold every pack it needs (their leases say so).
    case inUse = "in use"
}

/// Where a pack stands in a store.
public enum PackState: String, Sendable, Codable, Hashable {
    /// Not installed, and nobody is downloading it.
    case notDownloaded = "not downloaded"
    /// Being downloaded (its lock is held) or a partial download waits in `staging/` to be resumed.
    case downloading
    /// Installed in `packs/`.
    case downloaded
    /// Installed, and a request in some process holds it (its lease, see ``ResourceStore/isPackInUse(id:)``).
    case inUse = "in use"
}

extension ResourceStore {
    /// The installed file of logical path `path` in `snapshot`'s version: of a path with variants,
    /// the one the snapshot's ``CatalogSnapshot/lookup`` chose for this device.
    ///
    /// - Throws: ``ResourceError`` `unknown-resource` when the version does not list the path, or
    ///   lists it only in variants the device does not accept; `resource-not-installed` when its
    ///   pack is not installed.
    public func url(forResource path: String, in snapshot: CatalogSnapshot) throws(ResourceError) -> URL {
        guard let file = snapshot.lookup.file(atPath: path) else {
            let variants = snapshot.lookup.files(atPath: path).map(\.variant.variantDescription)
            guard variants.isEmpty else {
                throw ResourceError(.unknownResource, "Version \(snapshot.version) of the catalog has '\(path)' only in variants this device does not accept (\(variants.joined(separator: "; "))). Add one of those values to the variant choice (odr --variant axis=value,fallback) to use it.",
                                    url: snapshot.catalogURL)
            }
            throw ResourceError(.unknownResource, "Version \(snapshot.version) of the catalog has no file '\(path)'. Check the path (it is case-sensitive).",
                                url: snapshot.catalogURL)
        }
        let folder = packURL(id: file.pack)
        guard try pack(id: file.pack)?.isInstalled == true else {
            let tags = snapshot.lookup.pack(id: file.pack)?.tags.joined(separator: ", ") ?? "?"
            throw ResourceError(.resourceNotInstalled, "'\(path)' is in pack \(file.pack.prefix(12)), which is not installed. Fetch one of its tags first: \(tags).",
                                url: snapshot.catalogURL)
        }
        let byPath = folder.appending(path: file.path)
        return FileManager.default.fileExists(atPath: byPath.path) ? byPath : folder.appending(path: file.entry)
    }

    /// The state of pack `id`: installed (and in use by some process, or not), being downloaded
    /// (its lock is held or a partial download waits), or neither.
    public func state(ofPack id: String, installed: Set<String>) -> PackState {
        if installed.contains(id) { return isPackInUse(id: id) ? .inUse : .downloaded }
        if FileManager.default.fileExists(atPath: stagingURL.appending(path: "\(id).zip").path) { return .downloading }
        if let lock = try? FileLock.tryLock(lockPath(for: id)) {
            lock.unlock()
            return .notDownloaded
        }
        return .downloading
    }

    /// The state of a tag: the least advanced state of the packs it needs; in use when `inUse`
    /// names it or requests in any process hold all of its packs.
    public func state(ofTag tag: TagRecord, installed: Set<String>, inUse: Set<String> = []) -> TagState {
        let states = tag.packs.map { state(ofPack: $0, installed: installed) }
        if states.allSatisfy({ $0 == .downloaded || $0 == .inUse }) {
            return inUse.contains(tag.name) || states.allSatisfy({ $0 == .inUse }) ? .inUse : .downloaded
        }
        return states.contains(.downloading) ? .downloading : .notDownloaded
    }
}
