#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ODRFormat

extension ResourceStore {
    /// Checks every installed pack against the manifest that lists it: each entry's size and SHA-256,
    /// each shared path's link, and nothing extra; and that no pack folder lacks a row.
    ///
    /// Reads every installed byte; meant for `odr verify` and support, not for every launch.
    public func verify() throws(ResourceError) -> [StoreProblem] {
        var problems: [StoreProblem] = []
        var manifests = ManifestCache(database: database, folder: manifestsURL)
        let installed = try packs().filter(\.isInstalled)
        // Rows changed outside the runtime are trusted for nothing; ``repairDamage()`` removes them.
        problems += try read("list packs") { db in try Self.packRows(db).damaged }.map(\.storeProblem)
        let ids = Set(installed.map(\.id))
        for name in ((try? FileManager.default.contentsOfDirectory(atPath: packsURL.path)) ?? []).sorted() where !ids.contains(name) {
            problems.append(StoreProblem(packID: name, message: "folder in packs/ without an installed row"))
        }
        for pack in installed {
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
            if let walker = FileManager.default.enumerator(atPath: folder.path) {
                while let relative = walker.nextObject() as? String {
                    if (walker.fileAttributes?[.type] as? FileAttributeType) != .typeDirectory, !expectedPaths.contains(relative) {
                        problems.append(StoreProblem(packID: pack.id, path: relative, message: "not listed by the manifest"))
                    }
                }
            }
        }
        return problems
    }
}
