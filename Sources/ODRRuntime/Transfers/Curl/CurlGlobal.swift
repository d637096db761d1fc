internal import CCurl

/// `curl_global_init` must run once before any handle exists, before threads use curl.
enum CurlGlobal {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
    }()

    static func initializeOnce() {
        // A failed global init surfaces as a failed curl_easy_init/curl_multi_init right after.
        _ = initialized
    }
}
