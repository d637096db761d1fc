import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrpack sign CATALOG --key KEY`: signs `catalog.json` again (and rotates keys).
struct SignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign catalog.json (again), with a new expiry and a higher serial; optionally rotate the signing keys.",
        discussion: """
            Signs the catalog as it is: use it to sign an unsigned catalog, or to renew a signature \
            before it expires (run it from a scheduled job more often than --expires-in). With \
            --rotate-from, it first records a key rotation, signed by the old keys, that makes \
            the --key keys (with --threshold) the trusted set: clients that trust the old keys \
            follow it without an app release. See docs/SECURITY.md.

            Examples:
              odrpack sign out/catalog --key keys/release.key
              odrpack sign out/catalog --key keys/a.key --key keys/b.key --expires-in 7
              odrpack sign out/catalog --key keys/2027.key --rotate-from keys/release.key
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
    var catalog: String

    @Option(name: .customLong("key"), help: ArgumentHelp("A private key that signs; repeat for a threshold.", valueName: "key"))
    var keys: [String] = []

    @Option(name: .customLong("expires-in"), help: ArgumentHelp("Days until the signature expires.", valueName: "days"))
    var expiresInDays: Double = CatalogSigning.defaultExpiresIn / 86_400

    @Option(name: .customLong("rotate-from"),
            help: ArgumentHelp("A private key of the currently trusted set that signs a rotation to the --key keys; repeat to meet its threshold.",
                               valueName: "key"))
    var rotateFrom: [String] = []

    @Option(help: "With --rotate-from: how many of the new keys must sign from now on.")
    var threshold = 1

    func validate() throws {
        if keys.isEmpty { throw ValidationError("Name at least one signing key: --key keys/release.key.") }
        if expiresInDays <= 0 { throw ValidationError("--expires-in takes a positive number of days, e.g. --expires-in 30.") }
        if threshold < 1 || threshold > keys.count { throw ValidationError("--threshold must be between 1 and the number of --key keys (\(keys.count)).") }
    }

    func run() async throws {
        let index = try await reportingLibraryErrors {
            let signing = try CatalogSigning(keyFiles: keys.map { URL(filePath: $0) }, expiresIn: expiresInDays * 86_400)
            let previous = try rotateFrom.map { path throws(BuildError) in try CatalogSigning.loadKey(URL(filePath: path)) }
            return try CatalogEditor(catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)), signing: signing)
                .sign(rotatingFrom: previous, threshold: threshold)
        }
        print("signed serial \(index.serial), expires \(index.expires ?? "never"), signatures: \((index.signatures ?? []).map(\.keyID).joined(separator: ", "))")
        if let rotation = index.keyRotations?.last, !rotateFrom.isEmpty {
            print("key set \(rotation.version): \(rotation.keys.count) key(s), threshold \(rotation.threshold)")
        }
    }
}
