import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// The options every catalog command shares: where the catalog and the store are.
struct CatalogOptions: ParsableArguments {
    @Option(name: .customLong("catalog"),
            help: ArgumentHelp("The catalog's base URL (http:// or https://), a file:// URL or a local catalog folder. Default: $ODR_CATALOG, else the one catalog the store follows.",
                               valueName: "url"))
    var catalogArgument: String?

    @Option(name: .customLong("mirror"),
            help: ArgumentHelp("Another origin serving the same catalog (a second CDN, the bucket behind the CDN), tried after --catalog when it fails: a download continues there where it stopped. Repeat for several, in order.",
                               valueName: "url"))
    var mirrors: [String] = []

    @Flag(name: .customLong("allow-unsigned-mirrors"),
          help: "Accept an unsigned catalog.json from a --mirror when the primary does not answer. Without --trusted-key nothing proves a mirror serves the published catalog; use only for mirrors you control.")
    var allowUnsignedMirrors = false

    @Option(name: .customLong("catalog-id"),
            help: ArgumentHelp("The id of the catalog meant: a catalog.json of another id is refused, and with --offline a store that has not seen --catalog or a --mirror serve it (after a CDN move) uses its stored catalog of this id.",
                               valueName: "id"))
    var catalogID: String?

    @OptionGroup var storeOption: StoreOption

    /// The store directory: `--store` or `$ODR_STORE`.
    var store: String { storeOption.path }

    /// The catalog: `--catalog`, `$ODR_CATALOG`, or the one the store follows (``validate()``
    /// resolved it and said which on stderr).
    var catalog: String { (try? StoredCatalogChoice.resolve(argument: catalogArgument, store: store)) ?? "" }

    @Option(help: "The distribution to follow.")
    var distribution = "live"

    @Flag(help: "Do not contact the server; use the catalog stored by an earlier run.")
    var offline = false

    @Option(name: .customLong("trusted-key"),
            help: ArgumentHelp("Accept only a catalog.json signed by this public key (NAME.pub from 'odrpack key generate'); repeat for several, e.g. --trusted-key keys/release.key.pub.",
                               valueName: "file"))
    var trustedKeys: [String] = []

    @Option(name: .customLong("variant"),
            help: ArgumentHelp("This device's choice on a variant axis the catalog declares, best value first: e.g. --variant resolution=2x,1x (2x, else 1x) --variant texture=astc. Repeat for each axis; an axis not named takes its values in the catalog's order.",
                               valueName: "axis=value[,fallback...]"))
    var variantChoices: [String] = []

    /// The `--variant` choices (none: every axis in the catalog's declared order).
    func variants() throws(ResourceError) -> VariantPreferences {
        do { return try VariantPreferences.parse(variantChoices) } catch {
            throw ResourceError(.invalidArgument, "--variant: \(error.message)", cause: error)
        }
    }

    /// The trust settings: the `--trusted-key` keys (none: any catalog, as without signing).
    func trust() throws(ResourceError) -> CatalogTrust {
        var keys: [PublicSigningKey] = []
        for path in trustedKeys {
            do { keys.append(try PublicSigningKey.load(from: URL(filePath: path))) } catch {
                throw ResourceError(.invalidArgument, "--trusted-key \(path): \(error.message)", cause: error)
            }
        }
        return CatalogTrust(keys: keys)
    }

    var catalogURL: URL { ResourceManager.Configuration.catalogURL(parsing: catalog) }

    /// The `--mirror` origins, in order.
    var mirrorURLs: [URL] { mirrors.map(ResourceManager.Configuration.catalogURL(parsing:)) }

    /// The catalog's origins (`--catalog`, then each `--mirror`) with their settings applied to
    /// `client`; failures are recorded in `store`, as a game's manager does.
    func applyOrigins(to client: inout CatalogClient, store: ResourceStore) {
        guard !mirrors.isEmpty else { return }
        client.origins = OriginSet([catalogURL] + mirrorURLs, store: store)
        client.allowsUnsignedCatalogFromMirrors = allowUnsignedMirrors
    }

    func validate() throws {
        guard catalogArgument?.isEmpty != true else { throw ValidationError("--catalog needs a URL or a folder.") }
        let catalog = try StoredCatalogChoice.resolve(argument: catalogArgument, store: store)
        // `gopher://host/` is a URL of a scheme odr does not read, not a relative folder named `gopher:`.
        if let range = catalog.range(of: "://"), case let scheme = catalog[..<range.lowerBound].lowercased(),
           !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
           !["http", "https", "file"].contains(scheme) {
            throw ValidationError("--catalog \(catalog): odr reads catalogs over http://, https:// or file://, or from a local folder; '\(scheme)://' is none of them.")
        }
        for mirror in mirrors {
            guard let scheme = URL(string: mirror)?.scheme, ["http", "https"].contains(scheme) else {
                throw ValidationError("--mirror \(mirror): give an http:// or https:// URL of the catalog's folder on the other origin.")
            }
        }
        if catalogID?.isEmpty == true { throw ValidationError("--catalog-id needs the catalog's id (the \"id\" of its catalog.json).") }
        if allowUnsignedMirrors, mirrors.isEmpty { throw ValidationError("--allow-unsigned-mirrors needs at least one --mirror.") }
        do { _ = try VariantPreferences.parse(variantChoices) } catch { throw ValidationError("--variant: \(error.message)") }
    }

    /// Opens the store and a client for the catalog, with the install settings of commands that
    /// install (the others use the defaults: flushed writes, no bundled catalog).
    func open(installing install: InstallOptions? = nil) throws(ResourceError) -> (ResourceStore, CatalogClient, TransferEngine) {
        let store = try ResourceStore(directory: URL(filePath: store, directoryHint: .isDirectory),
                                      synchronousWrites: !(install?.noSync ?? false))
        let engine = try TransferEngine()
        var client = CatalogClient(catalogURL: catalogURL, distribution: distribution, store: store, transport: engine,
                                   bundledCatalog: install?.bundledCatalog, trust: try trust(), variants: try variants())
        applyOrigins(to: &client, store: store)
        client.catalogID = catalogID
        return (store, client, engine)
    }
}

/// The options of commands that install packs (`fetch`, `demo`); the others do not show them.
struct InstallOptions: ParsableArguments {
    @Option(help: "A bundled catalog folder whose packs install from disk instead of the network.")
    var bundled: String?

    @Flag(name: .customLong("no-sync"), help: "Do not flush installed files to disk before recording them (faster; a power loss may then lose recently installed packs, which the next open repairs).")
    var noSync = false

    @Option(name: .customLong("peer"),
            help: ArgumentHelp("Another device's store shared with odr share (its http:// URL), asked first for each file; repeatable. Every byte is checked against the catalog's digests; a peer that fails or lies is dropped and the CDN serves the rest.",
                               valueName: "url"))
    var peers: [String] = []

    @Flag(help: "Also ask peers found on the local network: odr share --announce services (DNS-SD _odr._tcp through Avahi) of this catalog, after the --peer URLs. Waits at most 2 s (less once a peer is found); without Avahi the fetch goes on without them.")
    var discover = false

    @Option(name: .customLong("discover-timeout"),
            help: ArgumentHelp("The most seconds --discover waits for Avahi (0.1 to 60, default 2): more on a busy network or machine, less to start sooner when no peer is there.",
                               valueName: "seconds"))
    var discoverTimeout: Double?

    @Option(name: .customLong("peer-timeout"),
            help: ArgumentHelp("The most seconds a peer (--peer, --discover) gets to start answering, connecting included, before it is dropped and the CDN serves its part (0.01 to 60, default 0.1): more for peers on Wi-Fi that sleeps.",
                               valueName: "seconds"))
    var peerTimeout: Double?

    var bundledCatalog: URL? { bundled.map { URL(filePath: $0, directoryHint: .isDirectory) } }

    /// The `--peer` URLs.
    var peerURLs: [URL] { peers.compactMap { URL(string: $0) } }

    func validate() throws {
        if let discoverTimeout {
            guard discoverTimeout.isFinite, (0.1...60).contains(discoverTimeout) else {
                throw ValidationError("--discover-timeout \(discoverTimeout): give 0.1 to 60 seconds, such as 5.")
            }
            guard discover else { throw ValidationError("--discover-timeout applies to --discover: add --discover, or drop it.") }
        }
        if let peerTimeout {
            guard peerTimeout.isFinite, (0.01...60).contains(peerTimeout) else {
                throw ValidationError("--peer-timeout \(peerTimeout): give 0.01 to 60 seconds, such as 0.5.")
            }
            guard discover || !peers.isEmpty else { throw ValidationError("--peer-timeout applies to peers: add --peer URL or --discover, or drop it.") }
        }
        for peer in peers {
            guard let url = URL(string: peer), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
                throw ValidationError("--peer \(peer): give the http:// URL odr share printed on the other device, such as http://192.168.1.20:7420/.")
            }
        }
    }
}
