import ArgumentParser
import Foundation
import ODRBuilder

/// `odrpack prune CATALOG --keep N`: deletes old versions and the packs only they used.
struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove versions no distribution uses (beyond the newest N) and packs no kept version uses.",
        discussion: """
            catalog.json is rewritten first, then files are deleted, so clients never see a version \
            whose files are gone. Removed: the dropped versions' manifests (versions/N.json, also \
            ones an earlier prune left unlisted), the packs and the split metadata (meta/) no kept \
            version uses. To delete them from a publish destination too, publish with --delete. Do not prune while a build writes to the same catalog. Clients \
            still on a pruned version will fail to fetch its packs; keep enough versions for them.

            Examples:
              odrpack prune out/catalog --keep 3 --dry-run
              odrpack prune out/catalog --keep 3
              odrpack prune out/catalog --keep 3 --sign-with keys/release.key
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
    var catalog: String

    @Option(help: "How many of the newest versions to keep even if no distribution uses them, e.g. --keep 3.")
    var keep: Int

    @Flag(help: "Show what would be removed without removing it.")
    var dryRun = false

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var signing: SigningOptions

    func validate() throws {
        if keep < 0 { throw ValidationError("--keep cannot be negative.") }
    }

    func run() async throws {
        let result = try await reportingLibraryErrors {
            try CatalogEditor(catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)), signing: try signing.signing())
                .prune(keep: keep, dryRun: dryRun)
        }
        if json {
            try printJSON(result)
            return
        }
        let verb = dryRun ? "would remove" : "removed"
        print("kept versions: \(result.keptVersions.map(String.init).joined(separator: ", "))")
        print("\(verb) versions: \(result.removedVersions.isEmpty ? "none" : result.removedVersions.map(String.init).joined(separator: ", "))")
        print("\(verb) \(result.removedPacks.count) pack(s), \(result.removedManifests.count) manifest(s)"
              + (result.removedMetadata.isEmpty ? "" : ", \(result.removedMetadata.count) metadata file(s)") + ", \(result.freedBytes) bytes")
    }
}
