import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// `odr verify`: checks every installed byte.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every installed pack against its manifest and the database; exit 1 on any mismatch.",
        discussion: """
            With --repair, packs with a problem are removed (marked not installed, their folders \
            deleted, unless a request holds them), so that the next fetch of their tags installs \
            them again; damaged database rows are deleted, and damaged trust records of catalogs \
            forgotten (the next check starts from the app's keys). Exit 0 when the store then verifies.

            Examples:
              odr verify --store ./store
              odr verify --store ./store --repair
            """)

    @OptionGroup var storeOption: StoreOption
    var store: String { storeOption.path }

    @Flag(help: "Remove what does not verify, so that the next fetch installs it again.")
    var repair = false

    func run() async throws {
        try await reportingResourceErrors {
            let store = try ResourceStore(directory: URL(filePath: store, directoryHint: .isDirectory))
            let repaired = store.repairReport
            for id in repaired.packsMarkedNotInstalled { print("repaired: pack \(id.prefix(12)) was incomplete; now not installed") }
            for id in repaired.removedPackFolders { print("repaired: removed uncommitted folder packs/\(id.prefix(12))") }
            for name in repaired.removedManifestFiles { print("repaired: removed unnamed manifest file manifests/\(name)") }
            for row in repaired.removedDamagedRows { print("repaired: removed \(row)") }
            var problems = try store.verify()
            for problem in problems { print("mismatch: \(problem)") }
            if repair, !problems.isEmpty {
                let report = try await store.repairDamage()
                for row in report.removedDamagedRows { print("repaired: removed \(row)") }
                let tags = Self.tags(ofPacks: Set(report.packsMarkedNotInstalled), in: store)
                for id in report.packsMarkedNotInstalled {
                    let again = tags[id].map { "fetch again: odr fetch \($0.joined(separator: " "))" } ?? "fetch its tags again"
                    print("repaired: pack \(id.prefix(12)) removed; \(again)")
                }
                for name in report.removedPackFolders { print("repaired: removed folder packs/\(name.prefix(64))") }
                problems = try store.verify()
                for problem in problems { print("still: \(problem)") }
            }
            let installed = try store.packs().filter(\.isInstalled)
            guard problems.isEmpty else {
                let what = repair ? "Packs that requests hold are left alone; end them and repair again." : "Run `odr verify --repair` to remove what is damaged, then fetch the affected tags again."
                throw ResourceError(.integrity, "\(problems.count) problem(s) in \(installed.count) installed pack(s). \(what)")
            }
            print("ok: \(installed.count) pack(s), \(byteText(installed.lazy.map(\.installedBytes).clampedSum())) verified")
        }
    }

    /// The tags of each of `ids` in the current version of the catalogs the store follows, to say
    /// what to fetch again; a pack no stored manifest lists has none.
    static func tags(ofPacks ids: Set<String>, in store: ResourceStore) -> [String: [String]] {
        var result: [String: [String]] = [:]
        for url in (try? store.followedCatalogURLs()) ?? [] {
            guard let followed = try? store.followedCatalog(url: url), let version = followed.currentVersion,
                  let manifest = try? store.manifest(catalogURL: url, version: version) else { continue }
            for pack in manifest.packs where ids.contains(pack.id) && !pack.tags.isEmpty { result[pack.id] = pack.tags }
        }
        return result
    }
}
