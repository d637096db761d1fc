import ArgumentParser
import Foundation

/// `--store`, shared by every `odr` command: the store directory, or `$ODR_STORE` when left out.
struct StoreOption: ParsableArguments {
    @Option(name: .customLong("store"),
            help: ArgumentHelp("The store directory (created if missing). Default: $ODR_STORE.", valueName: "store"))
    var argument: String?

    /// The directory given, or `$ODR_STORE`; empty when neither is (``validate()`` refuses that).
    var path: String { argument ?? ProcessInfo.processInfo.environment["ODR_STORE"] ?? "" }

    func validate() throws {
        guard !path.isEmpty else {
            throw ValidationError("give the store directory with --store DIR or in the environment variable ODR_STORE.")
        }
    }
}
