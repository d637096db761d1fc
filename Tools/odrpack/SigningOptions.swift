import ArgumentParser
import Foundation
import ODRBuilder

/// `--sign-with KEY` (repeatable) and `--expires-in DAYS`, shared by every command that writes
/// `catalog.json` (`build`, `distribution set`, `prune`).
struct SigningOptions: ParsableArguments {
    @Option(name: .customLong("sign-with"),
            help: ArgumentHelp("Sign catalog.json with this private key (from 'odrpack key generate'); repeat for a threshold, e.g. --sign-with keys/release.key.",
                               valueName: "key"))
    var keys: [String] = []

    @Option(name: .customLong("expires-in"),
            help: ArgumentHelp("Days until clients refuse the signed catalog as expired (default 30); re-sign before then with 'odrpack sign'.",
                               valueName: "days"))
    var expiresInDays: Double?

    func validate() throws {
        if let expiresInDays, expiresInDays <= 0 { throw ValidationError("--expires-in takes a positive number of days, e.g. --expires-in 30.") }
        if expiresInDays != nil, keys.isEmpty { throw ValidationError("--expires-in applies to signed catalogs; add --sign-with KEY.") }
    }

    /// The signing settings, or `nil` when no key was given.
    func signing() throws(BuildError) -> CatalogSigning? {
        guard !keys.isEmpty else { return nil }
        return try CatalogSigning(keyFiles: keys.map { URL(filePath: $0) },
                                  expiresIn: expiresInDays.map { $0 * 86_400 } ?? CatalogSigning.defaultExpiresIn)
    }
}
