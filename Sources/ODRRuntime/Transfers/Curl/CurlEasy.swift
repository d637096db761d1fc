internal import CCurl

/// Owns one curl easy handle (one HTTP exchange) and frees it in `deinit`.
///
/// Not thread-safe: it is created, configured, run and released on the transfer loop's thread only.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER`: curl writes a detailed message here when a call or transfer fails.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// Lists curl reads during the transfer; kept alive as long as the handle.
    private var retainedLists: [CurlStringList] = []

    init() throws(CurlError) {
        CurlGlobal.initializeOnce()
        guard let handle = curl_easy_init() else {
            throw CurlError(code: Int(CURLE_FAILED_INIT.rawValue), operation: "curl_easy_init",
                            summary: "could not create an easy handle", detail: "")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        let code = ccurl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
        guard code == CURLE_OK else {
            curl_easy_cleanup(handle)
            errorBuffer.deallocate()
            throw CurlError(code: code, operation: "curl_easy_setopt(CURLOPT_ERRORBUFFER)", detail: "")
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// The error buffer's text: the detail of the last failure on this handle.
    var errorDetail: String {
        String(cString: errorBuffer)
    }

    func check(_ code: CURLcode, _ operation: @autoclosure () -> String) throws(CurlError) {
        try CurlError.check(code, operation(), errorBuffer: code == CURLE_OK ? "" : errorDetail)
    }

    func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(ccurl_easy_setopt_long(handle, option, value), "curl_easy_setopt(\(option.rawValue))")
    }

    func set(_ option: CURLoption, _ value: Bool) throws(CurlError) {
        try set(option, value ? 1 : 0)
    }

    func set(_ option: CURLoption, offset value: Int64) throws(CurlError) {
        try check(ccurl_easy_setopt_off_t(handle, option, curl_off_t(value)), "curl_easy_setopt(\(option.rawValue))")
    }

    /// Sets a string option; curl copies the string.
    func set(_ option: CURLoption, _ value: String) throws(CurlError) {
        try check(ccurl_easy_setopt_string(handle, option, value), "curl_easy_setopt(\(option.rawValue))")
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(CurlError) {
        try check(ccurl_easy_setopt_pointer(handle, option, value), "curl_easy_setopt(\(option.rawValue))")
    }

    /// Sets a list option (`CURLOPT_HTTPHEADER`); the list lives as long as this handle.
    func set(_ option: CURLoption, list: CurlStringList) throws(CurlError) {
        retainedLists.append(list)
        try check(ccurl_easy_setopt_slist(handle, option, list.pointer), "curl_easy_setopt(\(option.rawValue))")
    }

    func set(_ option: CURLoption, callback: ccurl_data_callback) throws(CurlError) {
        try check(ccurl_easy_setopt_data_callback(handle, option, callback), "curl_easy_setopt(\(option.rawValue))")
    }

    func info(_ info: CURLINFO) throws(CurlError) -> Int {
        var value = 0
        try check(ccurl_easy_getinfo_long(handle, info, &value), "curl_easy_getinfo(\(info.rawValue))")
        return value
    }

    func info(offset info: CURLINFO) throws(CurlError) -> Int64 {
        var value: curl_off_t = 0
        try check(ccurl_easy_getinfo_off_t(handle, info, &value), "curl_easy_getinfo(\(info.rawValue))")
        return Int64(value)
    }

    /// Pauses (`paused == true`) or continues receiving and sending. Continuing may call the write
    /// callback synchronously with data curl held back.
    func setPaused(_ paused: Bool) throws(CurlError) {
        let mask = paused ? ccurl_pause_all() : ccurl_pause_continue()
        try check(curl_easy_pause(handle, mask), "curl_easy_pause")
    }
}
