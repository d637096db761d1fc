import Foundation
@testable import ODRFormat
import ODRTestSupport

/// Debian's `chromium` run headless on a local page, cut off from the network: every connection
/// goes to a proxy on a closed port and every host name fails to resolve, and a net log records
/// what the page asked for.
struct HeadlessChromium {
    /// The browser, or nil when it is not installed (`make deps` installs Debian's `chromium`).
    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") + ["/usr/bin"] {
            let candidate = "\(folder)/chromium"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    let executable: String
    /// Profiles and logs go here.
    let work: URL

    /// The flags of every run: headless, no network, no first-run work; `profile` keeps two runs at
    /// once from sharing a profile lock.
    private func flags(profile: String) -> [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--user-data-dir=\(work.appending(path: profile).path)"]
    }

    /// The page's DOM after its script ran, and the net log of the run.
    func dumpDOM(of page: URL) async throws -> (dom: String, netLog: URL) {
        let log = work.appending(path: "net-log.json")
        let result = try await runCommandOffPool(
            "timeout", ["120", executable] + flags(profile: "dom") + ["--log-net-log=\(log.path)", "--dump-dom", page.absoluteString])
        guard result.status == 0 else { throw BrowserFailure("chromium --dump-dom exited \(result.status): \(result.stderr.suffix(2000))") }
        return (result.stdout, log)
    }

    /// A PNG screenshot of the page at `width` x `height` CSS pixels.
    func screenshot(of page: URL, width: Int, height: Int) async throws -> URL {
        let png = work.appending(path: "screenshot.png")
        let result = try await runCommandOffPool(
            "timeout", ["120", executable] + flags(profile: "shot") + ["--window-size=\(width),\(height)", "--screenshot=\(png.path)", page.absoluteString])
        guard result.status == 0 else { throw BrowserFailure("chromium --screenshot exited \(result.status): \(result.stderr.suffix(2000))") }
        return png
    }

    /// The network requests a page made (any scheme but `file:` and `data:`), from a net log:
    /// requests the browser makes for itself have no origin (`not an origin`) and are left out.
    static func pageRequests(inNetLog url: URL) throws -> (events: Int, requests: [String]) {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        let types = (object?["constants"] as? [String: Any])?["logEventTypes"] as? [String: Int] ?? [:]
        let events = object?["events"] as? [[String: Any]] ?? []
        guard let start = types["URL_REQUEST_START_JOB"] else { throw BrowserFailure("the net log names no URL_REQUEST_START_JOB") }
        var requests: [String] = []
        for event in events where event["type"] as? Int == start {
            let params = event["params"] as? [String: Any] ?? [:]
            guard let target = params["url"] as? String, !target.hasPrefix("file:"), !target.hasPrefix("data:") else { continue }
            if let initiator = params["initiator"] as? String, initiator == "not an origin" { continue }
            requests.append(target)
        }
        return (events.count, requests)
    }
}

struct BrowserFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An 8-bit RGB or RGBA PNG, decoded (enough for a browser's screenshot).
struct PNGImage {
    var width: Int
    var height: Int
    /// Row-major pixels, `channels` bytes each.
    var pixels: [UInt8]
    var channels: Int

    init(contentsOf url: URL) throws {
        let bytes = [UInt8](try Data(contentsOf: url))
        guard bytes.count > 8, bytes.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw BrowserFailure("not a PNG")
        }
        func u32(_ at: Int) -> Int { Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]) }
        var offset = 8
        var compressed: [UInt8] = []
        var header: (width: Int, height: Int, depth: UInt8, color: UInt8, interlace: UInt8)?
        while offset + 12 <= bytes.count {
            let length = u32(offset)
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            guard offset + 12 + length <= bytes.count else { throw BrowserFailure("PNG chunk \(type) runs past the end") }
            let body = bytes[(offset + 8)..<(offset + 8 + length)]
            if type == "IHDR" {
                header = (u32(body.startIndex), u32(body.startIndex + 4), body[body.startIndex + 8], body[body.startIndex + 9], body[body.startIndex + 12])
            } else if type == "IDAT" {
                compressed += body
            }
            offset += 12 + length
        }
        guard let header, header.depth == 8, header.color == 2 || header.color == 6, header.interlace == 0,
              header.width > 0, header.height > 0, compressed.count > 6 else { throw BrowserFailure("unsupported PNG: \(String(describing: header))") }
        width = header.width
        height = header.height
        channels = header.color == 6 ? 4 : 3
        // zlib: a 2-byte header, raw deflate, an Adler-32.
        var raw: [UInt8] = []
        let inflater = try ZlibStream(.inflate)
        var scratch = [UInt8](repeating: 0, count: 1 << 16)
        try compressed[2...].withUnsafeBytes { input in
            _ = try inflater.process(input, scratch: &scratch) { raw += $0 }
        }
        let stride = width * channels
        guard raw.count >= height * (stride + 1) else { throw BrowserFailure("PNG data too short") }
        pixels = [UInt8](repeating: 0, count: height * stride)
        for y in 0..<height {
            let filter = raw[y * (stride + 1)]
            let line = y * (stride + 1) + 1
            for x in 0..<stride {
                let a = x >= channels ? Int(pixels[y * stride + x - channels]) : 0
                let b = y > 0 ? Int(pixels[(y - 1) * stride + x]) : 0
                let c = x >= channels && y > 0 ? Int(pixels[(y - 1) * stride + x - channels]) : 0
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
                    predictor = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
                default: throw BrowserFailure("PNG filter \(filter)")
                }
                pixels[y * stride + x] = UInt8(truncatingIfNeeded: Int(raw[line + x]) + predictor)
            }
        }
    }

    /// How many pixels have each RGB colour.
    func colourCounts() -> [UInt32: Int] {
        var counts: [UInt32: Int] = [:]
        var i = 0
        while i + 2 < pixels.count {
            counts[UInt32(pixels[i]) << 16 | UInt32(pixels[i + 1]) << 8 | UInt32(pixels[i + 2]), default: 0] += 1
            i += channels
        }
        return counts
    }
}
