@testable import ODRRuntime
import Testing

struct ResponseHeadersTests {
    @Test func keepsOnlyTheFinalResponsesHeaders() {
        var headers = ResponseHeaders()
        for line in ["HTTP/1.1 302 Found\r\n", "ETag: \"old\"\r\n", "Location: /b\r\n", "\r\n",
                     "HTTP/1.1 206 Partial Content\r\n", "etag:  \"abc\" \r\n", "Last-Modified: Tue, 01 Jul 2025 10:00:00 GMT\r\n",
                     "Content-Range: bytes 100-199/1000\r\n", "Content-Length: 100\r\n", "\r\n"] {
            headers.take(line: Substring(line))
        }
        #expect(headers.entityTag == "\"abc\"")
        #expect(headers.lastModified == "Tue, 01 Jul 2025 10:00:00 GMT")
        #expect(headers.contentRange == ContentRange(first: 100, last: 199, total: 1000))
        #expect(headers.contentLength == 100)
    }

    @Test(arguments: ["bytes 5-1/10", "bytes 0-9/5", "items 0-1/2", "bytes 0-/10", "bytes */10", "bytes 0-9"])
    func rejectsMalformedContentRanges(value: String) {
        #expect(ContentRange(value) == nil)
    }

    @Test func acceptsUnknownTotal() {
        #expect(ContentRange("bytes 0-9/*") == ContentRange(first: 0, last: 9, total: nil))
    }

    @Test func weakEntityTagsCannotGuardARange() {
        #expect(TransferValidators(entityTag: "W/\"x\"", lastModified: nil).ifRangeValue == nil)
        #expect(TransferValidators(entityTag: "W/\"x\"", lastModified: "date").ifRangeValue == "date")
        #expect(TransferValidators(entityTag: "\"x\"", lastModified: "date").ifRangeValue == "\"x\"")
    }
}
