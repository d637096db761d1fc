#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif
import ODRFormat

extension ResourceStore {
    /// Checks every installed pack against the manifest that lists it: each entry's size and SHA-256,
    /// each shared path's link, and nothing extra; and that no pack folder lacks a row.
    ///
    /// Reads every installed byte; meant for `odr verify` and support, not for every launch.
    ///
    /// Safe while other processes fetch and purge: each pack is checked under a lease (as a request
    /// holds it), so no purge removes it meanwhile, and after its row is read again; a pack purged
    /// or installed since the list was read is not a problem, nor is a folder in `packs/` whose
    /// pack another process is installing (its lock is held) or whose row was committed meanwhile.
    /// While verify holds a pack's lease, a purge in any process skips that pack as in use.
    public func verify() throws(ResourceError) -> [StoreProblem] {
        var problems: [StoreProblem] = []
        var manifests = ManifestCache(database: database, folder: manifestsURL)
        let installed = try packs().filter(\.isInstalled)
        // Rows changed outside the runtime are trusted for nothing; ``repairDamage()`` removes them.
        problems += try read("list packs") { db in try Self.packRows(db).damaged }.map(\.storeProblem)
        // A damaged trust record blocks every check of its catalog (`storage-failure`, which sends
        // the user here): reported, so `--repair` runs and forgets it.
        problems += try read("read trust records") { db in try Self.damagedTrustRecords(db) }.map {
            StoreProblem(packID: "", message: "damaged trust record of catalog '\($0.catalogID.prefix(80))' (\($0.problem)): every check of the catalog fails until `odr verify --repair` forgets it")
        }
        let ids = Set(installed.map(\.id))
        for name in ((try? FileManager.default.contentsOfDirectory(atPath: packsURL.path)) ?? []).sorted() where !ids.contains(name) {
            guard try isOrphanFolder(name) else { continue }
            problems.append(StoreProblem(packID: name, message: "folder in packs/ without an installed row"))
        }
        for listed in installed {
            // Shared, as a request's lease: a purge in any process now leaves the pack alone.
            let lease = try FileLock.lockShared(leases.path(for: listed.id))
            defer { lease.unlock() }
            // Purged between the list and the lease: gone on purpose, not missing.
            guard let pack = try pack(id: listed.id), pack.isInstalled else { continue }
            guard let manifest = manifests.manifest(containingPack: pack.id) else {
                problems.append(StoreProblem(packID: pack.id, message: "no stored manifest lists this pack"))
                continue
            }
            let folder = packURL(id: pack.id)
            var expectedPaths = Set<String>()
            for file in manifest.files(inPack: pack.id) {
                for path in Set([file.entry, file.path]) {
                    guard expectedPaths.insert(path).inserted else { continue }
                    let url = folder.appending(path: path)
                    var info = stat()
                    guard lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                        // A path of a later version than the one installed may lack its link; lookups fall back to the entry.
                        if path == file.entry { problems.append(StoreProblem(packID: pack.id, path: path, message: "missing")) }
                        continue
                    }
                    guard Int64(info.st_size) == file.size else {
                        problems.append(StoreProblem(packID: pack.id, path: path, message: "\(info.st_size) bytes, expected \(file.size)"))
                        continue
                    }
                    guard let digest = try? ContentHash.sha256Hex(ofFileAt: url) else {
                        problems.append(StoreProblem(packID: pack.id, path: path, message: "unreadable"))
                        continue
                    }
                    if digest != file.sha256 {
                        problems.append(StoreProblem(packID: pack.id, path: path, message: "SHA-256 \(digest.prefix(12)), expected \(file.sha256.prefix(12))"))
                    }
                }
            }
            // Every item below the folder (links are not followed) but folders.
            for relative in (try? FileManager.default.subpathsOfDirectory(atPath: folder.path)) ?? [] where !expectedPaths.contains(relative) {
                var info = stat()
                guard lstat(folder.path + "/" + relative, &info) != 0 || info.st_mode & S_IFMT != S_IFDIR else { continue }
                problems.append(StoreProblem(packID: pack.id, path: relative, message: "not listed by the manifest"))
            }
        }
        return problems
    }

    /// Whether `name`, a folder in `packs/` without an installed row when the rows were read, is
    /// still one: not when its row was committed since, nor while another process installs or
    /// removes that pack (it holds the pack's lock; the folder is between rename and commit).
    private func isOrphanFolder(_ name: String) throws(ResourceError) -> Bool {
        if try pack(id: name)?.isInstalled == true { return false }
        let lock: FileLock?
        do {
            guard let held = try FileLock.tryLock(lockPath(for: name)) else { return false }
            lock = held
        } catch {
            lock = nil  // a name no lock file can have (too long, say): no pack's, so nobody installs it
        }
        defer { lock?.unlock() }
        return try pack(id: name)?.isInstalled != true && packFolderExists(id: name)
    }
}
