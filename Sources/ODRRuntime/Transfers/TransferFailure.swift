internal import CCurl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a failed attempt means: the error to report, and whether another attempt may fix it.
///
/// Pure: maps curl result codes and HTTP statuses, so the policy is testable without a network.
struct TransferFailure: Sendable {
    var error: ResourceError
    /// Transient failures (connection, reset, truncation, stall, 5xx) are retried within the budget.
    var isRetryable: Bool

    /// Whether `code` says the server could not be reached at all (no connection was made).
    static func meansUnreachable(_ code: CURLcode) -> Bool {
        code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_COULDNT_CONNECT
    }

    /// Classifies an attempt that curl ended with `code` (not `CURLE_OK`).
    static func curl(_ code: CURLcode, cause: CurlError, url: URL) -> TransferFailure {
        func failure(_ errorCode: ResourceError.Code, _ message: String, retry: Bool) -> TransferFailure {
            TransferFailure(error: ResourceError(errorCode, message, url: url, cause: cause), isRetryable: retry)
        }
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return failure(.networkUnavailable,
                           "Could not connect to the server. Check the network connection and the catalog URL, then try again.",
                           retry: true)
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2,
             CURLE_HTTP2_STREAM, CURLE_SSL_CONNECT_ERROR, CURLE_AGAIN:
            return failure(.networkUnavailable,
                           "The connection to the server broke off repeatedly. Check the network connection, then try again.",
                           retry: true)
        case CURLE_OPERATION_TIMEDOUT:
            return failure(.timedOut,
                           "The server did not answer or the download stalled. Try again on a better connection.",
                           retry: true)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return failure(.untrustedServer,
                           "The server's TLS certificate could not be verified. Fix the server's certificate or the system trust store; verification stays on.",
                           retry: false)
        case CURLE_FILE_COULDNT_READ_FILE, CURLE_REMOTE_FILE_NOT_FOUND:
            return failure(.resourceUnavailable,
                           "The file does not exist. Check that the catalog and its files were published together.",
                           retry: false)
        case CURLE_REMOTE_ACCESS_DENIED, CURLE_LOGIN_DENIED:
            return failure(.accessDenied,
                           "Access to the resource was refused. Check the credentials configured for the catalog.",
                           retry: false)
        case CURLE_ABORTED_BY_CALLBACK:
            return failure(.cancelled, "The transfer was cancelled.", retry: false)
        case CURLE_WRITE_ERROR:
            return failure(.storageFailure, "The downloaded bytes could not be stored.", retry: false)
        case CURLE_OUT_OF_MEMORY:
            return failure(.storageFailure, "The system ran out of memory during the download.", retry: false)
        default:
            return failure(.unexpectedResponse,
                           "The download failed in an unexpected way (\(cause.summary)). Check the URL and the server.",
                           retry: false)
        }
    }

    /// Classifies a completed exchange by HTTP status; `nil` when the status is a success (2xx, 304).
    static func http(status: Int, url: URL) -> TransferFailure? {
        func failure(_ errorCode: ResourceError.Code, _ message: String, retry: Bool) -> TransferFailure {
            TransferFailure(error: ResourceError(errorCode, message, url: url, cause: HTTPStatusError(status: status)),
                            isRetryable: retry)
        }
        switch status {
        case 0, 200..<300, 304:
            return nil
        case 401, 403:
            return failure(.accessDenied,
                           "The server refused access (HTTP \(status)). Check the credentials or headers configured for the catalog.",
                           retry: false)
        case 404, 410:
            return failure(.resourceUnavailable,
                           "The server does not have \(url.absoluteString) (HTTP \(status)). Refresh the catalog; if it persists, the catalog and its files were not published together.",
                           retry: false)
        case 408:
            return failure(.timedOut, "The server timed out waiting for the request (HTTP 408). Try again later.", retry: true)
        case 429, 500..<600:
            return failure(.serverError,
                           "The server kept failing (HTTP \(status)) after several attempts. Try again later.",
                           retry: true)
        default:
            return failure(.unexpectedResponse,
                           "The server answered with HTTP \(status), which the runtime cannot use. Check the URL and the server configuration.",
                           retry: false)
        }
    }
}

/// The HTTP status of a failed exchange, kept as a ``ResourceError/cause``.
struct HTTPStatusError: Error, CustomStringConvertible, Sendable {
    var status: Int
    var description: String { "HTTP status \(status)" }
}
