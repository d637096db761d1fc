import Foundation
import Testing

@testable import ODRServe

/// The header and path parsing behind the server, case by case.
struct HTTPParsingTests {
    @Test(arguments: [
        ("bytes=0-9", 100, ByteRangeRequest.ranges([0...9])),
        ("bytes=90-", 100, .ranges([90...99])),
        ("bytes=-10", 100, .ranges([90...99])),
        ("bytes=-500", 100, .ranges([0...99])),
        ("bytes=50-5000", 100, .ranges([50...99])),
        ("bytes=0-0,-1", 100, .ranges([0...0, 99...99])),
        (" bytes = 1-2 , 4-5 ", 100, .ranges([1...2, 4...5])),
        ("bytes=0-9,,20-29", 100, .ranges([0...9, 20...29])),
        ("bytes=100-", 100, .unsatisfiable),
        ("bytes=-0", 100, .unsatisfiable),
        ("bytes=0-", 0, .unsatisfiable),
        ("bytes=200-300,100-", 100, .unsatisfiable),
        ("bytes=200-300,5-6", 100, .ranges([5...6])),
        ("bytes=99999999999999999999999-", 100, .unsatisfiable),
        ("bytes=5-3", 100, .whole),
        ("bytes=a-b", 100, .whole),
        ("bytes=1-2-3", 100, .whole),
        ("bytes=", 100, .whole),
        ("lines=0-9", 100, .whole),
        ("bytes 0-9", 100, .whole),
    ])
    func rangeHeaders(header: String, size: Int, expected: ByteRangeRequest) {
        #expect(ByteRangeRequest(header: header, size: size) == expected)
    }

    @Test func tooManyRangesAreAnsweredWhole() {
        let header = "bytes=" + (0..<101).map { "\($0)-\($0)" }.joined(separator: ",")
        #expect(ByteRangeRequest(header: header, size: 1000) == .whole)
    }

    @Test(arguments: [
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (1_795_701_599, "Thu, 26 Nov 2026 13:59:59 GMT"),
        (4_107_542_400, "Mon, 01 Mar 2100 00:00:00 GMT"),
    ])
    func httpDatesRoundTrip(seconds: Int, text: String) {
        #expect(HTTPDate.format(seconds) == text)
        #expect(HTTPDate.parse(text) == seconds)
    }

    @Test(arguments: ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "06 Nov 1994", "Sun, 06 Nov 1994 25:00:00 GMT", ""])
    func otherDateFormsAreNotParsed(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test(arguments: [
        ("/", [String]()),
        ("/packs/a.zip", ["packs", "a.zip"]),
        ("//packs///a.zip?x=1#frag", ["packs", "a.zip"]),
        ("/./packs/./a.zip", ["packs", "a.zip"]),
        ("/Level%203/map.json", ["Level 3", "map.json"]),
        ("/%2e%2e/x", ["..", "x"]),
        ("/a%2fb", ["a", "b"]),
        ("http://example.com/packs/a.zip", ["packs", "a.zip"]),
        ("http://example.com", []),
    ])
    func requestTargetsSplitIntoDecodedSegments(target: String, expected: [String]) {
        #expect(CatalogRoot.segments(ofTarget: target) == expected)
    }

    @Test(arguments: ["packs/a.zip", "*", "/a%2", "/a%zz", "/a%00b", "/%ff%fe"])
    func malformedTargetsAreRejected(target: String) {
        #expect(CatalogRoot.segments(ofTarget: target) == nil)
    }

    @Test(arguments: [
        ("catalog.json", "application/json"),
        ("A.ZIP", "application/zip"),
        ("noextension", "application/octet-stream"),
        (".hidden", "application/octet-stream"),
        ("map.tar.gz", "application/gzip"),
    ])
    func contentTypes(name: String, expected: String) {
        #expect(ContentType.forFile(named: Substring(name)) == expected)
    }
}
