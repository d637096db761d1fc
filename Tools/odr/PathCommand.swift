import ArgumentParser
import Foundation
import ODRRuntime

/// `odr path`: where an installed resource is.
struct PathCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Print the installed file of a resource path; fail if its tags are not installed.",
        discussion: """
            A path with variants resolves to the file of the --variant choice (as odr fetch takes \
            it; without one, every axis in the catalog's declared order).

            Examples, with CDN=http://127.0.0.1:8080/:
              odr path --catalog $CDN --store ./store Levels/Level1/map.json
              odr path --catalog $CDN --store ./store --variant resolution=2x,1x \\
                Textures/tree.png
            """)

    @OptionGroup var options: CatalogOptions

    @Argument(help: "The resource's logical path, as the catalog lists it.")
    var resource: String

    func run() async throws {
        try await reportingResourceErrors {
            let (store, client, _) = try options.open()
            // Paths of installed packs must resolve without a network.
            let snapshot = try await client.snapshot(online: false)
            try snapshot.requireDeclaredVariants()
            print(try store.url(forResource: resource, in: snapshot).path)
        }
    }
}
