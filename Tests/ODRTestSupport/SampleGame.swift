import Foundation
import ODRBuilder

/// The repository's sample game (`SampleAssets`, the catalog `make demo` serves), for tests that
/// play it as the documentation does.
public enum SampleGame {
    /// The `SampleAssets` folder of the repository.
    public static let assets = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "SampleAssets", directoryHint: .isDirectory)

    /// Builds the sample game's catalog into `directory`/catalog and returns its folder.
    public static func buildCatalog(in directory: TemporaryDirectory) async throws -> URL {
        var options = BuildOptions(assets: assets, output: directory.appending("catalog"))
        options.concurrency = 2
        _ = try await CatalogBuilder(options: options).build()
        return options.output
    }
}
