internal import CCurl

/// Owns the curl multi handle (connection cache, HTTP/2 multiplexing, DNS cache) and frees it in
/// `deinit`.
///
/// All calls except ``wakeup()`` must come from the transfer loop's thread; `curl_multi_wakeup` is
/// documented as callable from any thread.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    init() throws(CurlError) {
        CurlGlobal.initializeOnce()
        guard let handle = curl_multi_init() else {
            throw CurlError(code: Int(CURLM_INTERNAL_ERROR.rawValue), operation: "curl_multi_init",
                            summary: "could not create a multi handle", detail: "")
        }
        self.handle = handle
    }

    deinit {
        curl_multi_cleanup(handle)
    }

    func set(_ option: CURLMoption, _ value: Int) throws(CurlError) {
        try CurlError.check(ccurl_multi_setopt_long(handle, option, value), "curl_multi_setopt(\(option.rawValue))")
    }

    func add(_ easy: CurlEasy) throws(CurlError) {
        try CurlError.check(curl_multi_add_handle(handle, easy.handle), "curl_multi_add_handle")
    }

    func remove(_ easy: CurlEasy) throws(CurlError) {
        try CurlError.check(curl_multi_remove_handle(handle, easy.handle), "curl_multi_remove_handle")
    }

    /// Drives every transfer as far as it can go without blocking; returns how many are still running.
    @discardableResult
    func perform() throws(CurlError) -> Int {
        var running: Int32 = 0
        try CurlError.check(curl_multi_perform(handle, &running), "curl_multi_perform")
        return Int(running)
    }

    /// Blocks until a socket is ready, `timeoutMilliseconds` pass, or ``wakeup()`` is called.
    func poll(timeoutMilliseconds: Int) throws(CurlError) {
        var ready: Int32 = 0
        try CurlError.check(curl_multi_poll(handle, nil, 0, Int32(clamping: timeoutMilliseconds), &ready), "curl_multi_poll")
    }

    /// Interrupts a ``poll(timeoutMilliseconds:)`` in progress; safe from any thread.
    func wakeup() {
        // A failed wakeup only delays the loop until its poll timeout; there is nobody to report to.
        _ = curl_multi_wakeup(handle)
    }

    /// The next finished transfer: its easy handle pointer and curl's result.
    func nextCompletion() -> (handle: UnsafeMutableRawPointer, result: CURLcode)? {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(handle, &remaining) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                return (easy, ccurl_msg_result(message))
            }
        }
        return nil
    }

    /// How long curl wants to wait at most before it is called again (for its own timers).
    func timeoutMilliseconds() -> Int {
        var value = -1
        _ = curl_multi_timeout(handle, &value)
        return value
    }
}
