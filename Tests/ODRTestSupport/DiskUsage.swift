import Foundation

/// What `du -s -B1 -c` reports for `paths` together: their allocated blocks in bytes, each
/// physical file once even when several of the paths link to it, as a user measures a store.
/// No path at all is 0.
public func diskUsage(of paths: [String]) throws -> Int64 {
    guard !paths.isEmpty else { return 0 }
    let result = try runCommand("/usr/bin/du", ["-s", "-B1", "-c"] + paths)
    guard result.status == 0,
          let total = result.stdout.split(separator: "\n").last?.split(whereSeparator: { $0 == "\t" || $0 == " " }).first,
          let bytes = Int64(total) else {
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "du \(paths): \(result.stdout)\(result.stderr)"])
    }
    return bytes
}

/// `du`'s figure for the installed packs of the store at `store`: every pack folder under
/// `packs/`, without the `packs/` folder itself (which the store never counts nor frees).
public func diskUsage(ofPacksIn store: String) throws -> Int64 {
    let packs = store + "/packs"
    let names = try FileManager.default.contentsOfDirectory(atPath: packs).sorted()
    return try diskUsage(of: names.map { packs + "/" + $0 })
}
