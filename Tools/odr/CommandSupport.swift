import ArgumentParser
import Foundation
import ODRCommandLine
import ODRFormat
import ODRRuntime

/// Runs a command body; a `ResourceError` prints `error[<code>]: <message>` on stderr and exits 1.
func reportingResourceErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ResourceError {
        ToolErrors.print(code: error.code.rawValue, message: messageNamingURL(error))
        throw ExitCode(1)
    }
}

/// The error's message, followed by the URL it is about when the message does not name it
/// ("Could not connect to the server. ... (http://cdn.example.com/mygame/catalog.json)").
func messageNamingURL(_ error: ResourceError) -> String {
    guard let url = error.url else { return error.message }
    let text = url.isFileURL ? url.path : url.absoluteString
    return error.message.contains(text) ? error.message : "\(error.message) (\(text))"
}

/// Writes a value as pretty JSON with sorted keys on stdout.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    var data = try encoder.encode(value)
    data.append(0x0A)
    FileHandle.standardOutput.write(data)
}

/// Byte counts for people: `12.3 MiB`.
func byteText(_ bytes: Int64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes), unit = 0
    while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
    return unit == 0 ? "\(bytes) bytes" : String(format: "%.1f %@", value, units[unit])
}

/// A time for people and logs: `2026-05-01T12:00:00Z` (UTC, ISO 8601).
func timeText(_ secondsSince1970: Double) -> String {
    Date(timeIntervalSince1970: secondsSince1970).formatted(.iso8601.dateSeparator(.dash).timeSeparator(.colon))
}

/// Loads the catalog for a command (online unless `--offline`), says on stderr when it is a stored
/// or expired copy, and checks the command's `--variant` choice against it.
///
/// - Throws: ``ResourceError`` from loading, or `invalid-argument` for an axis or value the catalog
///   does not declare.
func loadCheckedCatalog(_ manager: ResourceManager, offline: Bool) async throws -> CatalogSnapshot {
    let snapshot = try await manager.loadCatalog(online: !offline)
    announceFallback(snapshot)
    try snapshot.requireDeclaredVariants()
    return snapshot
}

/// Says on stderr when `snapshot` is the stored catalog because the server could not be reached
/// (a notice) or sent a stale `catalog.json` (a warning), and from when, and when that signed
/// catalog has expired (installed packs still serve, nothing new installs); prints nothing for a
/// catalog checked online.
func announceFallback(_ snapshot: CatalogSnapshot) {
    if snapshot.isExpired {
        let line = "notice: the stored catalog (version \(snapshot.version)) expired at \(snapshot.index.expires ?? "an unknown time"); installed packs still serve, but nothing new installs from it until a fresh signed catalog is fetched online.\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
    guard let fallback = snapshot.fallback else { return }
    var stored = "stored by an earlier run"
    if let checkedAt = fallback.checkedAt {
        stored = "last checked online at \(timeText(checkedAt))"
    }
    // A stale catalog.json is the server's (or its CDN's) mistake, worth a warning to whoever runs it.
    let line = fallback.isStale
        ? "warning: the catalog server sent a stale catalog.json, refused [\(fallback.reason.code)]: \(messageNamingURL(fallback.reason)); going on with the stored copy of the catalog (version \(snapshot.version)), \(stored).\n"
        : "notice: the catalog server cannot be reached [\(fallback.reason.code)]: \(messageNamingURL(fallback.reason)); going on with the stored copy of the catalog (version \(snapshot.version)), \(stored).\n"
    FileHandle.standardError.write(Data(line.utf8))
}
