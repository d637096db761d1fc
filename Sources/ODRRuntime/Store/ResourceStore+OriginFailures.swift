#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

extension ResourceStore {
    /// When each origin (a catalog base URL, as ``OriginSet`` spells it) last failed, in seconds
    /// since 1970 on the clock of the process that saw it fail; rows that are not a finite time
    /// are left out (written outside the runtime).
    func originFailures() throws(ResourceError) -> [String: Double] {
        try read("read the origins that failed") { db in
            var failures: [String: Double] = [:]
            for row in try db.fetchAll(sql: "SELECT origin, failedAt FROM originFailure") {
                guard let origin = try? StoreRow.text(row, "origin"), let failedAt = try? StoreRow.number(row, "failedAt") else { continue }
                failures[origin] = failedAt
            }
            return failures
        }
    }

    /// Records that `origin` failed at `time`.
    func recordOriginFailure(_ origin: String, at time: Double) throws(ResourceError) {
        try write("record an origin that failed") { db in
            try db.execute(sql: "INSERT OR REPLACE INTO originFailure (origin, failedAt) VALUES (?, ?)", arguments: [origin, time])
        }
    }

    /// Forgets the failure of `origin`: it served what was asked.
    func clearOriginFailure(_ origin: String) throws(ResourceError) {
        try write("clear an origin's failure") { db in
            try db.execute(sql: "DELETE FROM originFailure WHERE origin = ?", arguments: [origin])
        }
    }
}
