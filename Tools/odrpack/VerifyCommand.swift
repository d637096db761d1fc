import ArgumentParser
import Foundation
import ODRBuilder

/// `odrpack verify CATALOG`: checks every manifest, pack hash, entry hash and reference.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every version, pack and entry of a catalog; exit non-zero on the first problem.",
        discussion: """
            Reads catalog.json and every version it lists, hashes every pack archive against its id, \
            inflates and hashes every entry against its file record, and checks every reference. \
            The first problem is printed with its code and file, and the exit status is 1.

            Examples:
              odrpack verify out/catalog
              odrpack verify out/catalog --json
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
    var catalog: String

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func run() async throws {
        let summary = try await reportingLibraryErrors {
            try CatalogVerifier(catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory))).verify()
        }
        if json {
            try printJSON(summary)
        } else {
            print("OK: \(summary.versions) version(s), \(summary.packs) pack(s), \(summary.entries) entries, \(summary.files) file records, \(summary.bytes) bytes checked"
                  + (summary.metadataFiles > 0 ? "; \(summary.metadataFiles) split metadata file(s) match their pins" : ""))
            if !summary.orphanMetadata.isEmpty {
                print("note: \(summary.orphanMetadata.count) file(s) in meta/ that no version pins (odrpack prune removes them): \(summary.orphanMetadata.prefix(5).joined(separator: ", "))\(summary.orphanMetadata.count > 5 ? ", ..." : "")")
            }
        }
    }
}
