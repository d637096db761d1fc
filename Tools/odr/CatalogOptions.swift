import ArgumentParser
import Foundation
import ODRRuntime

/// The options every catalog command shares: where the catalog and the store are.
struct CatalogOptions: ParsableArguments {
    @Option(help: "The catalog's base URL (http://, https:// or file://), or a local catalog folder.")
    var catalog: String

    @Option(help: "The store directory (created if missing).")
    var store: String

    @Option(help: "The distribution to follow.")
    var distribution = "live"

    @Flag(help: "Do not contact the server; use the catalog stored by an earlier run.")
    var offline = false

    var catalogURL: URL { ResourceManager.Configuration.catalogURL(parsing: catalog) }

    func validate() throws {
        guard !catalog.isEmpty else { throw ValidationError("--catalog needs a URL or a folder.") }
        guard !store.isEmpty else { throw ValidationError("--store needs a directory.") }
    }

    /// Opens the store and a client for the catalog, with the install settings of commands that
    /// install (the others use the defaults: flushed writes, no bundled catalog).
    func open(installing install: InstallOptions? = nil) throws(ResourceError) -> (ResourceStore, CatalogClient, TransferEngine) {
        let store = try ResourceStore(directory: URL(filePath: store, directoryHint: .isDirectory),
                                      synchronousWrites: !(install?.noSync ?? false))
        let engine = try TransferEngine()
        let client = CatalogClient(catalogURL: catalogURL, distribution: distribution, store: store, transport: engine,
                                   bundledCatalog: install?.bundledCatalog)
        return (store, client, engine)
    }
}

/// The options of commands that install packs (`fetch`, `demo`); the others do not show them.
struct InstallOptions: ParsableArguments {
    @Option(help: "A bundled catalog folder whose packs install from disk instead of the network.")
    var bundled: String?

    @Flag(name: .customLong("no-sync"), help: "Do not flush installed files to disk before recording them (faster; a power loss may then lose recently installed packs, which the next open repairs).")
    var noSync = false

    var bundledCatalog: URL? { bundled.map { URL(filePath: $0, directoryHint: .isDirectory) } }
}
