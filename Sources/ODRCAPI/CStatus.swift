import CODR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import ODRFormat
import ODRRuntime

/// The C API's status codes and what each means, in one table: the Swift code each mirrors (one to
/// one, see ``mirrored``) and the stable name `odr_status_name` returns.
enum CStatus {
    /// Every ``ResourceError/Code`` with its `odr_status`. A Swift code missing here is reported as
    /// `ODR_E_OTHER`; `CStatusTests` fails when one is missing.
    static let mirrored: [(code: ResourceError.Code, status: odr_status)] = [
        (.networkUnavailable, ODR_E_NETWORK_UNAVAILABLE),
        (.resourceUnavailable, ODR_E_RESOURCE_UNAVAILABLE),
        (.accessDenied, ODR_E_ACCESS_DENIED),
        (.serverError, ODR_E_SERVER_ERROR),
        (.unexpectedResponse, ODR_E_UNEXPECTED_RESPONSE),
        (.timedOut, ODR_E_TIMED_OUT),
        (.untrustedServer, ODR_E_UNTRUSTED_SERVER),
        (.rangeNotSupported, ODR_E_RANGE_NOT_SUPPORTED),
        (.integrity, ODR_E_INTEGRITY),
        (.invalidCatalog, ODR_E_INVALID_CATALOG),
        (.invalidTag, ODR_E_INVALID_TAG),
        (.invalidArgument, ODR_E_INVALID_ARGUMENT),
        (.outOfSpace, ODR_E_OUT_OF_SPACE),
        (.exceededMaximumInUseSize, ODR_E_EXCEEDED_MAXIMUM_IN_USE_SIZE),
        (.storageFailure, ODR_E_STORAGE_FAILURE),
        (.cacheBudgetExceeded, ODR_E_CACHE_BUDGET_EXCEEDED),
        (.cancelled, ODR_E_CANCELLED),
        (.beginTwice, ODR_E_BEGIN_TWICE),
        (.beginAfterEnd, ODR_E_BEGIN_AFTER_END),
        (.endBeforeBegin, ODR_E_END_BEFORE_BEGIN),
        (.catalogRollback, ODR_E_CATALOG_ROLLBACK),
        (.catalogUnavailable, ODR_E_CATALOG_UNAVAILABLE),
        (.unknownResource, ODR_E_UNKNOWN_RESOURCE),
        (.resourceNotInstalled, ODR_E_RESOURCE_NOT_INSTALLED),
        (.untrustedCatalog, ODR_E_UNTRUSTED_CATALOG),
        (.catalogExpired, ODR_E_CATALOG_EXPIRED),
        (.networkPolicy, ODR_E_NETWORK_POLICY),
    ]

    /// The codes only the C API has, with their stable names.
    static let cOnly: [(name: String, status: odr_status)] = [
        ("ok", ODR_OK),
        ("buffer-too-small", ODR_E_BUFFER_TOO_SMALL),
        ("wait-timeout", ODR_E_WAIT_TIMEOUT),
        ("share-stopped", ODR_E_SHARE_STOPPED),
        ("bind-failed", ODR_E_BIND_FAILED),
        ("unsupported", ODR_E_UNSUPPORTED),
        ("other", ODR_E_OTHER),
    ]

    /// A C-only condition raised inside the C API as a ``ResourceError`` with this code.
    static let waitTimeout = ResourceError.Code(rawValue: "wait-timeout")
    /// See ``waitTimeout``.
    static let bufferTooSmall = ResourceError.Code(rawValue: "buffer-too-small")
    /// See ``waitTimeout``: `odr_share_*` on a share `odr_share_stop` stopped.
    static let shareStopped = ResourceError.Code(rawValue: "share-stopped")
    /// See ``waitTimeout``: a share that cannot listen on its host and port.
    static let bindFailed = ResourceError.Code(rawValue: "bind-failed")
    /// See ``waitTimeout``: a function this build of the library leaves out (sharing without the
    /// package's trait Sharing, `make install SHARING=1`).
    static let unsupported = ResourceError.Code(rawValue: "unsupported")

    private static let byCode: [String: odr_status] = Dictionary(
        uniqueKeysWithValues: mirrored.map { ($0.code.rawValue, $0.status) } + cOnly.map { ($0.name, $0.status) })

    /// The status of a Swift code (or of a C-only one); `ODR_E_OTHER` for a code newer than this table.
    static func status(of code: ResourceError.Code) -> odr_status {
        byCode[code.rawValue] ?? ODR_E_OTHER
    }

    /// Every status's name as a C string allocated once, never freed: `odr_status_name` hands them out.
    static let names = StaticCStrings(
        mirrored.map { ($0.status.rawValue, $0.code.rawValue) } + cOnly.map { ($0.status.rawValue, $0.name) }
        + [(UInt32.max, "unknown-status"), (versionKey, libraryVersion)])

    /// The name of `status`, "unknown-status" for a value that is none.
    static func name(of status: odr_status) -> UnsafePointer<CChar> {
        names[status.rawValue] ?? names[UInt32.max] ?? CLastError.empty
    }
}

/// C strings made once and kept for the life of the process, so callers may hold them forever.
struct StaticCStrings: @unchecked Sendable {
    // The pointers are written once, here, and only read afterwards.
    private let pointers: [UInt32: UnsafePointer<CChar>]

    init(_ entries: [(UInt32, String)]) {
        var pointers: [UInt32: UnsafePointer<CChar>] = [:]
        for (key, text) in entries { pointers[key] = Self.copy(text) }
        self.pointers = pointers
    }

    /// A NUL-terminated copy of `text` that is never freed.
    static func copy(_ text: String) -> UnsafePointer<CChar> {
        let bytes = Array(text.utf8CString)
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        pointer.initialize(from: bytes, count: bytes.count)
        return UnsafePointer(pointer)
    }

    subscript(key: UInt32) -> UnsafePointer<CChar>? { pointers[key] }
}

/// The calling thread's last error, as libgit2's `git_error_last` and SQLite's `sqlite3_errmsg`
/// keep it: set by every failing call, read with `odr_error_message` / `odr_error_status`.
enum CLastError {
    private struct Keys: @unchecked Sendable {
        // pthread keys are plain integers, created once and never deleted.
        var message = pthread_key_t()
        var status = pthread_key_t()
    }

    private static let keys: Keys = {
        var keys = Keys()
        // The message is a strdup'd copy, freed when replaced or when its thread exits.
        pthread_key_create(&keys.message) { free($0) }
        pthread_key_create(&keys.status, nil)
        return keys
    }()

    private static let emptyString = StaticCStrings([(0, "")])

    /// A static empty C string.
    static var empty: UnsafePointer<CChar> { emptyString[0] ?? StaticCStrings.copy("") }

    /// Records `status` and `message` as this thread's last error and returns `status`.
    static func record(_ status: odr_status, _ message: String) -> odr_status {
        let previous = pthread_getspecific(keys.message)
        pthread_setspecific(keys.message, strdup(message))
        free(previous)
        pthread_setspecific(keys.status, UnsafeRawPointer(bitPattern: UInt(status.rawValue) + 1))
        return status
    }

    /// Records `error` as this thread's last error and returns its status.
    static func record(_ error: any Error) -> odr_status {
        let (status, message) = describe(error)
        return record(status, message)
    }

    /// The status and message a C caller sees for `error`.
    static func describe(_ error: any Error) -> (odr_status, String) {
        if let error = error as? ResourceError { return (CStatus.status(of: error.code), CMessages.translated(error.description)) }
        return (ODR_E_OTHER, "\(error)")
    }

    static var message: UnsafePointer<CChar> {
        guard let pointer = pthread_getspecific(keys.message) else { return empty }
        return UnsafePointer(pointer.assumingMemoryBound(to: CChar.self))
    }

    static var status: odr_status {
        guard let raw = pthread_getspecific(keys.status) else { return ODR_OK }
        return odr_status(rawValue: UInt32(truncatingIfNeeded: UInt(bitPattern: raw) - 1))
    }

    static func clear() {
        free(pthread_getspecific(keys.message))
        pthread_setspecific(keys.message, nil)
        pthread_setspecific(keys.status, nil)
    }
}

/// Shorthand: an `invalid-argument` error with `message`.
func invalidArgument(_ message: String) -> ResourceError {
    ResourceError(.invalidArgument, message)
}

/// The runtime's messages name Swift API (`prepare()`, `downloadPolicy.allowsMeteredUrgent`); a C
/// caller sees the C function or option instead. Swift callers keep the Swift names: only
/// ``CLastError/describe(_:)`` translates.
enum CMessages {
    /// Each Swift phrase and what a C caller reads instead, applied in order.
    static let replacements: [(swift: String, c: String)] = [
        ("call beginAccessingResources() first", "call odr_request_begin first"),
        ("Call prepare() first", "Call odr_manager_prepare first"),
        ("downloadPolicy.allowsMeteredUrgent = true (ODR_OPT_METERED_URGENT 1 in C, odr fetch --allow-metered)",
         "ODR_OPT_METERED_URGENT 1"),
        ("downloadPolicy.allowsMeteredNonUrgent = true (ODR_OPT_METERED_NON_URGENT 1 in C, odr fetch --allow-metered)",
         "ODR_OPT_METERED_NON_URGENT 1"),
        ("downloadPolicy.dailyMeteredByteBudget (ODR_OPT_METERED_DAILY_BUDGET in C)", "ODR_OPT_METERED_DAILY_BUDGET"),
        ("beginAccessingResources()", "odr_request_begin"),
        ("endAccessingResources()", "odr_request_end"),
        ("prepare()", "odr_manager_prepare"),
    ]

    /// `message` with the Swift names replaced by the C ones.
    static func translated(_ message: String) -> String {
        guard message.contains("()") || message.contains("downloadPolicy.") else { return message }
        var text = message
        for (swift, c) in replacements { text = text.replacing(swift, with: c) }
        return text
    }
}
