import ArgumentParser
import Foundation
import ODRRuntime

/// `odr verify`: checks every installed byte.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every installed pack against its manifest and the database; exit 1 on any mismatch.",
        discussion: "Example: odr verify --store ./store")

    @Option(help: "The store directory.")
    var store: String

    func run() async throws {
        try await reportingResourceErrors {
            let store = try ResourceStore(directory: URL(filePath: store, directoryHint: .isDirectory))
            let repaired = store.repairReport
            for id in repaired.packsMarkedNotInstalled { print("repaired: pack \(id.prefix(12)) was incomplete; now not installed") }
            for id in repaired.removedPackFolders { print("repaired: removed uncommitted folder packs/\(id.prefix(12))") }
            for name in repaired.removedManifestFiles { print("repaired: removed unnamed manifest file manifests/\(name)") }
            let problems = try store.verify()
            let installed = try store.packs().filter(\.isInstalled)
            for problem in problems { print("mismatch: \(problem)") }
            guard problems.isEmpty else {
                throw ResourceError(.integrity, "\(problems.count) problem(s) in \(installed.count) installed pack(s). Fetch the affected tags again.")
            }
            print("ok: \(installed.count) pack(s), \(byteText(installed.reduce(0) { $0 + $1.installedBytes })) verified")
        }
    }
}
