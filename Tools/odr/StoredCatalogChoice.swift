import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// Which catalog an `odr` command uses when `--catalog` is left out: `$ODR_CATALOG`, else the one
/// catalog the store follows. Resolved once per process (the store is read once, and the notice
/// saying which catalog was chosen is printed once).
enum StoredCatalogChoice {
    private static let resolved = Locked<String?>(nil)

    /// `argument` when given; otherwise `$ODR_CATALOG`, or the catalog the store follows, said on stderr.
    ///
    /// - Throws: a `ValidationError` that says what to pass when the store holds no catalog or several.
    static func resolve(argument: String?, store: String) throws -> String {
        if let argument { return argument }
        if let environment = ProcessInfo.processInfo.environment["ODR_CATALOG"], !environment.isEmpty { return environment }
        if let done = resolved.withLock({ $0 }) { return done }
        let directory = URL(filePath: store, directoryHint: .isDirectory)
        guard FileManager.default.fileExists(atPath: directory.appending(path: ResourceStore.databaseName).path) else {
            throw ValidationError("give the catalog with --catalog URL or in the environment variable ODR_CATALOG: the store '\(store)' has not followed one yet.")
        }
        let urls: [URL]
        do {
            urls = try ResourceStore(directory: directory).followedCatalogURLs()
        } catch {
            throw ValidationError("give the catalog with --catalog URL: the store '\(store)' could not be read [\(error.code)]: \(error.message)")
        }
        switch urls.count {
        case 0:
            throw ValidationError("give the catalog with --catalog URL or in the environment variable ODR_CATALOG: the store '\(store)' has not followed one yet.")
        case 1:
            let chosen = urls[0].isFileURL ? urls[0].path : urls[0].absoluteString
            FileHandle.standardError.write(Data("notice: using the catalog the store follows, \(chosen) (pass --catalog or set ODR_CATALOG for another).\n".utf8))
            resolved.withLock { $0 = chosen }
            return chosen
        default:
            let list = urls.map(\.absoluteString).joined(separator: ", ")
            throw ValidationError("the store '\(store)' follows \(urls.count) catalogs (\(list)): choose one with --catalog URL or ODR_CATALOG.")
        }
    }
}
