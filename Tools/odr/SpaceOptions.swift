import ArgumentParser
import ODRCommandLine
import Foundation
import ODRRuntime

/// The space settings of commands that install (`fetch`, `demo`): the same cache budget and
/// free-space watermark a game's `ResourceManager` uses, with the runtime's defaults.
struct SpaceOptions: ParsableArguments {
    @Option(name: .customLong("cache-budget"),
            help: "The most bytes of installed packs the store may hold, as a byte size (1048576, 100MB, 100 MiB, 256k); packs no request uses are purged to stay under it. (default: no budget)",
            transform: ByteSizeArgument.bytes)
    var cacheBudget: Int64?

    @Option(help: ArgumentHelp(
        "Purge packs no request uses while free space would fall below this byte size (1048576, 100MB, 100 MiB, 256k) after the download. (default: \(byteText(ResourceManager.Configuration.defaultFreeSpaceWatermark)))",
        discussion: "0 purges only what the download itself needs. A watermark above the file system's size purges every pack not in use, but the download still succeeds when it fits."),
            transform: ByteSizeArgument.bytes)
    var watermark: Int64 = ResourceManager.Configuration.defaultFreeSpaceWatermark

    @Option(name: .customLong("keep-versions"), help: ArgumentHelp(
        "How many earlier catalog versions keep their superseded packs (0 or 1).",
        discussion: "1 keeps the packs of the newest earlier version, which a process still using it or a rollback needs; older versions' packs are deleted as soon as no request holds them. 0 deletes every superseded pack not in use."))
    var keepVersions: Int = 1

    func validate() throws {
        guard (0...1).contains(keepVersions) else { throw ValidationError("--keep-versions must be 0 or 1.") }
        if let cacheBudget, cacheBudget <= 0 { throw ValidationError("--cache-budget must be a positive number of bytes.") }
        guard watermark >= 0 else { throw ValidationError("--watermark must be 0 or a positive number of bytes.") }
    }
}

extension CatalogOptions {
    /// A resource manager over the catalog and the store, with the install settings of commands
    /// that install and the space settings of those that purge (defaults otherwise). Every `odr`
    /// command that installs or purges goes through it, so it behaves as a game's runtime does.
    func openManager(installing install: InstallOptions? = nil, space: SpaceOptions? = nil,
                     cacheBudget defaultBudget: Int64? = nil, metered: MeteredOptions? = nil) throws(ResourceError) -> ResourceManager {
        var configuration = ResourceManager.Configuration(
            catalogURL: catalogURL, storeDirectory: URL(filePath: store, directoryHint: .isDirectory))
        configuration.distribution = distribution
        configuration.bundledCatalog = install?.bundledCatalog
        configuration.synchronousWrites = !(install?.noSync ?? false)
        configuration.cacheBudget = space?.cacheBudget ?? defaultBudget
        if let space {
            configuration.freeSpaceWatermark = space.watermark
            configuration.keptPreviousVersions = space.keepVersions
        }
        configuration.trustedKeys = try trust().keys
        metered?.apply(to: &configuration.downloadPolicy)
        configuration.variants = try variants()
        configuration.mirrors = mirrorURLs
        configuration.peers = install?.peerURLs ?? []
        configuration.discoversPeers = install?.discover ?? false
        if let timeout = install?.discoverTimeout { configuration.peerDiscoveryTimeout = timeout }
        if let timeout = install?.peerTimeout { configuration.peerFirstByteTimeout = timeout }
        configuration.allowsUnsignedCatalogFromMirrors = allowUnsignedMirrors
        configuration.catalogID = catalogID
        return try ResourceManager(configuration: configuration)
    }
}
