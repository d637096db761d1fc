#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// The bytes downloaded over metered networks today (UTC), kept in the store's
/// `metered-usage.json` so the daily budget survives a restart.
///
/// One small JSON file rather than a table: it changes once per pack, needs no migration, and a
/// lost or unreadable file only forgets today's count (the budget starts the day afresh). Processes
/// sharing a store each keep their own count and write the file in turn; the file holds the last.
final class MeteredUsage: Sendable {
    private struct Record: Codable, Equatable {
        /// Days since 1970-01-01, UTC.
        var day: Int64
        var bytes: Int64
    }

    private let file: URL
    private let record: Locked<Record>
    /// Whether bytes were counted since the last save.
    private let unsaved = Locked(false)

    /// Loads today's count from `directory`, or starts at 0.
    init(directory: URL, now: Double) {
        file = directory.appending(path: "metered-usage.json")
        let today = Self.day(of: now)
        var loaded = Record(day: today, bytes: 0)
        if let data = try? Data(contentsOf: file), let stored = try? JSONDecoder().decode(Record.self, from: data),
           stored.day == today, stored.bytes >= 0 {
            loaded = stored
        }
        record = Locked(loaded)
    }

    /// The UTC calendar day of `secondsSince1970`.
    static func day(of secondsSince1970: Double) -> Int64 {
        Int64((secondsSince1970 / 86_400).rounded(.down))
    }

    /// Bytes counted on the day of `now` (0 on a new day).
    func bytes(now: Double) -> Int64 {
        record.withLock { $0.day == Self.day(of: now) ? $0.bytes : 0 }
    }

    /// Adds `count` bytes to the day of `now`.
    func add(_ count: Int64, now: Double) {
        guard count > 0 else { return }
        let today = Self.day(of: now)
        record.withLock { record in
            if record.day != today { record = Record(day: today, bytes: 0) }
            record.bytes += count
        }
        unsaved.withLock { $0 = true }
    }

    /// Writes the count to the store if it changed; a failure to write only loses the count
    /// across a restart.
    func save() {
        guard unsaved.withLock({ changed in
            defer { changed = false }
            return changed
        }) else { return }
        let snapshot = record.withLock { $0 }
        guard let data = try? JSONEncoder().encode(snapshot) else { return }
        try? data.write(to: file, options: .atomic)
    }
}
