import ArgumentParser
import Foundation
import ODRRuntime

/// `odrbench store`: the store's byte figures against `du` across updates (issue 38's targets).
struct StoreBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "The store's byte figures (odr status, odr purge) against du, across updates that share files by hard link.",
        discussion: """
            Builds a catalog whose tag is --mib incompressible files of 1 MiB, installs it with the \
            `odr` built next to this executable (from the catalog folder, --no-sync), then publishes \
            --updates versions that each change one file and applies each with `odr update`. After \
            every update it compares `odr status --json`'s installed bytes with `du -s -B1 -c` of the \
            pack folders in the store's packs/ (target: within 2%), and checks the store holds at most the current \
            version plus one superseded version's own bytes (target: du <= 1.03 x (mib + 1) MiB). \
            Then `odr purge --bytes 1 --json`: its reported freed bytes against what du shows \
            freed (target: within 2% and 64 KiB); then one more update and a purge of every pack, \
            checked the same way. Last, a fresh store under --cache-budget of 1.5 \
            copies of the tag takes the same updates: each must succeed with du under the budget. \
            The workspace is removed at the end.
            """)

    @Option(help: "Files of 1 MiB in the tag; at least 4.")
    var mib = 20

    @Option(help: "Updates of one file each; at least 1, less than --mib.")
    var updates = 3

    func validate() throws {
        guard mib >= 4 else { throw ValidationError("--mib must be at least 4.") }
        guard updates >= 1, updates < mib else { throw ValidationError("--updates must be at least 1 and less than --mib.") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/du") else { throw ValidationError("/usr/bin/du is needed.") }
    }

    struct Status: Decodable {
        struct Usage: Decodable { var installedBytes: Int64; var sharedBytes: Int64 }
        var store: Usage
    }
    struct Purge: Decodable { var bytesFreed: Int64 }

    func run() async throws {
        let odr = try ChildProcess.sibling("odr")
        let workspace = FileManager.default.temporaryDirectory.appending(path: "odrbench-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let catalog = workspace.appending(path: "catalog")
        let assets = GeneratedAssets(folder: workspace.appending(path: "assets"), packLimitMiB: 2 * mib)
        try assets.write(files: 0..<mib, bytes: 1 << 20, revision: 0)
        try await assets.build(into: catalog, distribution: "live")
        let mebibyte = Double(1 << 20)
        var failures: [String] = []

        func odrRun(_ arguments: [String]) throws -> String {
            let result = try ChildProcess.measure([odr] + arguments)
            guard result.status == 0 else { throw ValidationFailure("odr \(arguments.joined(separator: " ")) failed (exit \(result.status))") }
            return result.output
        }
        /// du of every pack folder under `packs` (each physical file once), without `packs/` itself,
        /// which the store neither counts nor frees.
        func du(_ packs: URL) throws -> Int64 {
            let folders = ((try? FileManager.default.contentsOfDirectory(atPath: packs.path)) ?? []).sorted().map { packs.path + "/" + $0 }
            guard !folders.isEmpty else { return 0 }
            let result = try ChildProcess.measure(["/usr/bin/du", "-s", "-B1", "-c"] + folders)
            guard result.status == 0, let total = result.output.split(separator: "\n").last?.split(whereSeparator: { $0 == "\t" || $0 == " " }).first,
                  let bytes = Int64(total) else {
                throw ValidationFailure("du of \(packs.path) failed")
            }
            return bytes
        }

        print("A tag of \(mib) x 1 MiB, \(updates) update(s) of one file each, applied with odr update:")
        let store = workspace.appending(path: "store")
        let common = ["--catalog", catalog.path, "--store", store.path]
        _ = try odrRun(["fetch"] + common + ["--no-sync", "--quiet", "bench"])
        var worstStatus = 0.0
        for update in 1...updates {
            try assets.write(files: [update], bytes: 1 << 20, revision: UInt64(update))
            try await assets.build(into: catalog, distribution: "live")
            _ = try odrRun(["update"] + common)
            let measured = try du(store.appending(path: "packs"))
            let status = try JSONDecoder().decode(Status.self, from: Data(try odrRun(["status"] + common + ["--json"]).utf8))
            let ratio = Double(status.store.installedBytes) / Double(measured)
            worstStatus = max(worstStatus, abs(ratio - 1))
            let bound = 1.03 * Double(mib + 1) * mebibyte
            print(BenchFormat.row("after update \(update)", String(format: "status %.2f MiB, du %.2f MiB (%.3fx); bound %.2f MiB", Double(status.store.installedBytes) / mebibyte,
                                                                  Double(measured) / mebibyte, ratio, bound / mebibyte)))
            if Double(measured) > bound { failures.append("update \(update): du \(measured) over \(Int64(bound))") }
        }
        print(BenchFormat.row("status vs du", String(format: "worst %.2f%% (target <= 2%%)", worstStatus * 100)))
        if worstStatus > 0.02 { failures.append("status vs du off by \(worstStatus * 100)%") }

        /// Runs `odr purge --bytes bytes --json` and checks its reported freed bytes against du's.
        func purge(_ label: String, bytes: Int64) throws {
            let before = try du(store.appending(path: "packs"))
            let purge = try JSONDecoder().decode(Purge.self, from: Data(try odrRun(["purge"] + common + ["--bytes", "\(bytes)", "--json"]).utf8))
            let freed = before - (try du(store.appending(path: "packs")))
            let error = Double(abs(purge.bytesFreed - freed))
            print(BenchFormat.row(label, String(format: "reported %.2f MiB, du freed %.2f MiB (%.3fx; target within 2%% and 64 KiB)",
                                                Double(purge.bytesFreed) / mebibyte, Double(freed) / mebibyte,
                                                freed > 0 ? Double(purge.bytesFreed) / Double(freed) : 0)))
            if freed <= 0 || error > Double(freed) * 0.02 || error > 64 * 1024 { failures.append("\(label) reported \(purge.bytesFreed), du freed \(freed)") }
        }
        try purge("purge --bytes 1", bytes: 1)
        // One more update, then a purge of every pack: the superseded one frees its own file, the
        // current one (deleted after it, sharing nothing any more) all of its files.
        try assets.write(files: [0], bytes: 1 << 20, revision: UInt64(updates + 1))
        try await assets.build(into: catalog, distribution: "live")
        _ = try odrRun(["update"] + common)
        try purge("purge of every pack", bytes: Int64.max)

        let budget = Int64(mib) * (1 << 20) * 3 / 2
        print("The same updates into a fresh store under --cache-budget \(budget) (1.5 copies):")
        let budgeted = workspace.appending(path: "budgeted")
        let budgetCommon = ["--catalog", catalog.path, "--store", budgeted.path]
        // Version by version again: the catalog's earlier versions stay published under their numbers.
        _ = try odrRun(["fetch"] + budgetCommon + ["--no-sync", "--quiet", "--cache-budget", "\(budget)", "bench"])
        for update in 1...updates {
            try assets.write(files: [mib - update], bytes: 1 << 20, revision: UInt64(100 + update))
            try await assets.build(into: catalog, distribution: "live")
            _ = try odrRun(["update"] + budgetCommon + ["--cache-budget", "\(budget)"])
            let measured = try du(budgeted.appending(path: "packs"))
            print(BenchFormat.row("after update \(update)", String(format: "du %.2f MiB of %.2f MiB budget", Double(measured) / mebibyte, Double(budget) / mebibyte)))
            if measured > budget { failures.append("budgeted update \(update): du \(measured) over \(budget)") }
        }
        if failures.isEmpty {
            print("every target met")
        } else {
            for failure in failures { print("NOT MET: \(failure)") }
            throw ExitCode(1)
        }
    }
}
