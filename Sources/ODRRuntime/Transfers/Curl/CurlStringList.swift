internal import CCurl

/// Owns a `curl_slist` (request headers) and frees it when released.
///
/// An easy handle that uses the list keeps a reference to this object, because curl reads the list
/// during the transfer without copying it.
final class CurlStringList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    init(_ lines: [String]) throws(CurlError) {
        for line in lines {
            guard let extended = curl_slist_append(pointer, line) else {
                throw CurlError(code: Int(CURLE_OUT_OF_MEMORY.rawValue), operation: "curl_slist_append",
                                summary: "out of memory", detail: "")
            }
            pointer = extended
        }
    }

    deinit {
        curl_slist_free_all(pointer)
    }
}
