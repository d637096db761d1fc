import Foundation
import ODRFormat
import ODRTestSupport

/// Deterministic content for packs: compressible text, incompressible "media", empty files.
enum PackFixtures {
    /// Pseudo-random bytes from a fixed seed, which deflate cannot shrink.
    static func noise(count: Int, seed: UInt64) -> Data { deterministicBytes(count: count, seed: seed) }

    /// Repetitive JSON-like text, which deflate shrinks a lot.
    static func text(count: Int, seed: Int) -> Data {
        var text = ""
        var i = seed
        while text.utf8.count < count {
            text += "{\"tile\": \(i % 97), \"kind\": \"grass\", \"height\": \(i % 13)},\n"
            i += 1
        }
        return Data(text.utf8.prefix(count))
    }

    /// A mixed set of entries: names sorted, as writers require.
    static func mixedEntries(scale: Int = 1) -> [(String, Data)] {
        [
            ("a/empty.txt", Data()),
            ("a/map.json", text(count: 200_000 * scale, seed: 1)),
            ("b/texture.png", noise(count: 300_000 * scale, seed: 2)),
            ("b/tiny.txt", Data("hello".utf8)),
            ("c/sound.ogg", noise(count: 70_000 * scale, seed: 3)),
            ("c/level.json", text(count: 3_000_000 * scale, seed: 4)),
        ].sorted { $0.0 < $1.0 }
    }

    /// Writes `entries` to a new pack in `dir`; returns its URL and summary.
    static func writePack(_ entries: [(String, Data)], in dir: TemporaryDirectory, name: String = "pack.zip",
                          options: PackWriter.Options = .init()) throws -> (URL, PackSummary) {
        let url = dir.appending(name)
        let writer = try PackWriter(creating: url, options: options)
        for (entryName, data) in entries { _ = try writer.addEntry(named: entryName, data: data) }
        return (url, try writer.finish())
    }
}
