internal import CCurl

/// A failed libcurl call, with curl's own words: `curl_easy_strerror` and the handle's error buffer.
///
/// It travels as the ``ResourceError/cause`` of the public error, so its type never leaks.
struct CurlError: Error, CustomStringConvertible, Sendable {
    /// The `CURLcode` (or `CURLMcode` for multi calls) as a plain number.
    var code: Int
    /// Which call failed, for example `curl_easy_setopt(CURLOPT_URL)`.
    var operation: String
    /// `curl_easy_strerror` / `curl_multi_strerror` text.
    var summary: String
    /// The handle's `CURLOPT_ERRORBUFFER` text, which names hosts, ports and system errors.
    var detail: String

    var description: String {
        var text = "curl error \(code) in \(operation): \(summary)"
        if !detail.isEmpty, detail != summary { text += " (\(detail))" }
        return text
    }

    /// Throws unless `code` is `CURLE_OK`; every easy-handle return code goes through here.
    static func check(_ code: CURLcode, _ operation: @autoclosure () -> String, errorBuffer: String = "") throws(CurlError) {
        guard code != CURLE_OK else { return }
        throw CurlError(code: code, operation: operation(), detail: errorBuffer)
    }

    /// Throws unless `code` is `CURLM_OK`; every multi-handle return code goes through here.
    static func check(_ code: CURLMcode, _ operation: @autoclosure () -> String) throws(CurlError) {
        guard code != CURLM_OK else { return }
        let summary = curl_multi_strerror(code).map { String(cString: $0) } ?? "unknown multi error"
        throw CurlError(code: Int(code.rawValue), operation: operation(), summary: summary, detail: "")
    }

    init(code: Int, operation: String, summary: String, detail: String) {
        self.code = code
        self.operation = operation
        self.summary = summary
        self.detail = detail
    }

    init(code: CURLcode, operation: String, detail: String) {
        let summary = curl_easy_strerror(code).map { String(cString: $0) } ?? "unknown error"
        self.init(code: Int(code.rawValue), operation: operation, summary: summary, detail: detail)
    }
}
