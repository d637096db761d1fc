import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrpack key generate --output NAME`: creates an Ed25519 key pair for signing catalogs.
struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Create keys that sign catalogs.",
        subcommands: [Generate.self]
    )

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate",
            abstract: "Write a new Ed25519 private key (mode 0600) to NAME and its public key to NAME.pub.",
            discussion: """
                Keep NAME secret (on the build machine or in the CI's secret store); ship NAME.pub \
                with the app, which trusts catalogs it signed (ResourceManager.Configuration.trustedKeys, \
                odr --trusted-key). Existing files are never overwritten. Prints the key id (SHA-256 \
                of the public key), which signatures in catalog.json name. See docs/SECURITY.md.

                Examples:
                  odrpack key generate --output keys/release.key
                  odrpack build assets --output out/catalog --sign-with keys/release.key
                """
        )

        @Option(name: .shortAndLong, help: ArgumentHelp("The private key file to create; the public key goes to NAME.pub.", valueName: "name"))
        var output: String

        func run() async throws {
            let key = SigningKey.generate()
            let url = URL(filePath: output)
            try await reportingLibraryErrors {
                do throws(FormatError) { try key.write(to: url) } catch {
                    throw BuildError(.signingKey, error.message, file: url.path, cause: error.cause)
                }
            }
            print("private key: \(url.path) (keep it secret)")
            print("public key:  \(PublicSigningKey.fileURL(forPrivateKeyAt: url).path)")
            print("key id:      \(key.publicKey.id)")
        }
    }
}
