import CCurl
import Foundation
@testable import ODRRuntime
import Testing

struct TransferFailureTests {
    private let url = URL(string: "http://127.0.0.1:1/packs/a.zip")!

    @Test(arguments: [
        (404, ResourceError.Code.resourceUnavailable, false),
        (410, .resourceUnavailable, false),
        (401, .accessDenied, false),
        (403, .accessDenied, false),
        (400, .unexpectedResponse, false),
        (408, .timedOut, true),
        (429, .serverError, true),
        (500, .serverError, true),
        (503, .serverError, true),
    ])
    func httpStatusesMapToCodes(status: Int, code: ResourceError.Code, retryable: Bool) throws {
        let failure = try #require(TransferFailure.http(status: status, url: url))
        #expect(failure.error.code == code)
        #expect(failure.isRetryable == retryable)
        #expect(failure.error.url == url)
    }

    @Test(arguments: [0, 200, 206, 304])
    func successStatusesAreNotFailures(status: Int) {
        #expect(TransferFailure.http(status: status, url: url) == nil)
    }

    @Test func curlCodesMapToCodesAndKeepCurlsText() {
        let cases: [(CURLcode, ResourceError.Code, Bool)] = [
            (CURLE_COULDNT_CONNECT, .networkUnavailable, true),
            (CURLE_COULDNT_RESOLVE_HOST, .networkUnavailable, true),
            (CURLE_PARTIAL_FILE, .networkUnavailable, true),
            (CURLE_RECV_ERROR, .networkUnavailable, true),
            (CURLE_OPERATION_TIMEDOUT, .timedOut, true),
            (CURLE_PEER_FAILED_VERIFICATION, .untrustedServer, false),
            (CURLE_FILE_COULDNT_READ_FILE, .resourceUnavailable, false),
            (CURLE_TOO_MANY_REDIRECTS, .unexpectedResponse, false),
        ]
        for (code, expected, retryable) in cases {
            let cause = CurlError(code: code, operation: "transfer", detail: "Failed to connect to 127.0.0.1 port 1")
            let failure = TransferFailure.curl(code, cause: cause, url: url)
            #expect(failure.error.code == expected, "\(code)")
            #expect(failure.isRetryable == retryable, "\(code)")
            #expect("\(failure.error)".contains("port 1"))
        }
    }

    @Test func codesHaveStableRawValues() {
        #expect(ResourceError.Code.networkUnavailable.rawValue == "network-unavailable")
        #expect(ResourceError.Code.integrity.rawValue == "integrity")
        #expect(ResourceError.Code.exceededMaximumInUseSize.rawValue == "exceeded-maximum-in-use-size")
    }
}
