import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrpack build ASSETS --output CATALOG`: packs tagged assets into a new catalog version.
struct BuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Pack an assets folder into a new version of a catalog.",
        discussion: """
            Reads the tag rules (ASSETS/odr.json unless --rules is given), hashes every file, puts \
            each distinct tag set in its own pack, writes packs/<sha256>.zip, then versions/<n+1>.json, \
            then catalog.json last, and points the distribution at the new version. If nothing changed \
            since the latest version, no version is added. A new catalog gets split metadata (tag bins \
            and per-pack file tables in meta/, so clients fetch only what they use and what changed); \
            --whole-manifest writes one versions/<n>.json listing everything instead, for runtimes \
            that cannot read split metadata. A catalog keeps the form of its latest version unless \
            --split-metadata, --whole-manifest or "splitMetadata" in odr.json says otherwise. With "variants" in the rules, files such as \
            tree@2x.png become variants of one logical path (tree.png), packed per tag set and variant; \
            the report shows what a device preferring each value downloads per tag. A progress bar appears when stderr is a \
            terminal; the report goes to stdout (--json for machines). See docs/ODRPACK.md.

            Examples:
              odrpack build SampleAssets --output out/catalog
              odrpack build assets -o out/catalog --distribution test --json > report.json
              odrpack build assets --output out/catalog --rules ci/odr.json --no-cache
              odrpack build assets --output out/catalog --sign-with keys/release.key --expires-in 30
              odrpack build assets --output out/catalog --report-html build-report.html
              odrpack build assets --output out/catalog --whole-manifest
            """
    )

    @Argument(help: ArgumentHelp("The assets folder to pack.", valueName: "assets"))
    var assets: String

    @Option(name: .shortAndLong, help: ArgumentHelp("The catalog folder to write; created if missing, e.g. --output out/catalog.", valueName: "catalog"))
    var output: String

    @Option(help: ArgumentHelp("The rules file (default: ASSETS/odr.json), e.g. --rules ci/odr.json.", valueName: "file"))
    var rules: String?

    @Option(help: "The distribution to point at the new version, e.g. --distribution test.")
    var distribution = "live"

    @Option(name: .customLong("catalog-id"), help: "The catalog id (default: odr.json's catalogID, the existing catalog's id, or the assets folder name).")
    var catalogID: String?

    @Flag(help: "Give a file larger than the pack size limit a pack of its own instead of failing.")
    var allowOversize = false

    @Flag(help: "Hash every file instead of trusting the build cache (path, size, mtime, inode).")
    var noCache = false

    @Option(help: ArgumentHelp("The build cache file (default: ~/.cache/odrpack/<assets-key>.json).", valueName: "file"))
    var cache: String?

    @Option(help: "Files hashed and packs compressed at once (default: every core).")
    var jobs: Int?

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Option(name: .customLong("report-html"),
            help: ArgumentHelp("Also write the version's HTML report (as odrpack report --html, against the version before it), e.g. --report-html report.html.", valueName: "file"))
    var reportHTML: String?

    @Flag(name: .customLong("split-metadata"),
          help: "Write split metadata (format 3): tag bins and a file table per pack in meta/, so clients fetch only what they use and change. The default for a new catalog; switches a whole-manifest catalog to split. Also \"splitMetadata\": true in odr.json.")
    var splitMetadata = false

    @Flag(name: .customLong("whole-manifest"),
          help: "Write one whole manifest (format 1, 2 or 4) instead of split metadata, for runtimes that cannot read split metadata; the catalog's later builds keep it. Also \"splitMetadata\": false in odr.json.")
    var wholeManifest = false

    @OptionGroup var signing: SigningOptions

    func validate() throws {
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1.") }
        if distribution.isEmpty { throw ValidationError("--distribution cannot be empty.") }
        if noCache, cache != nil { throw ValidationError("--no-cache and --cache cannot be used together.") }
        if splitMetadata, wholeManifest { throw ValidationError("--split-metadata and --whole-manifest cannot be used together.") }
    }

    func run() async throws {
        let assetsURL = URL(filePath: assets, directoryHint: .isDirectory)
        var options = BuildOptions(assets: assetsURL, output: URL(filePath: output, directoryHint: .isDirectory))
        options.rules = rules.map { URL(filePath: $0) }
        options.catalogID = catalogID
        options.distribution = distribution
        options.allowOversize = allowOversize
        if splitMetadata { options.splitMetadata = true }
        if wholeManifest { options.splitMetadata = false }
        options.cache = noCache ? nil : cache.map { URL(filePath: $0) } ?? BuildCache.defaultLocation(forAssets: assetsURL)
        if let jobs { options.concurrency = jobs }
        let bar = ProgressBar()
        let report = try await reportingLibraryErrors {
            defer { bar.finish() }
            options.signing = try signing.signing()
            return try await CatalogBuilder(options: options).build { bar.update($0) }
        }
        if let reportHTML {
            try await reportingLibraryErrors {
                let catalog = CatalogDirectory(root: options.output)
                let earlier = try catalog.loadIndex().versions.map(\.number).filter { $0 < report.version }.max()
                try CatalogReport(catalog: catalog, version: report.version, against: earlier, build: report)
                    .writeHTML(to: URL(filePath: reportHTML))
            }
        }
        if json {
            try printJSON(report)
        } else {
            print(report.rendered(), terminator: "")
        }
    }
}
