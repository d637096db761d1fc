import Foundation
import ODRFormat
import Testing

/// The compact binary form a store keeps of each accepted manifest, and the index over a manifest.
struct ManifestCompactTests {
    /// A manifest with shared strings, a non-ASCII path, a zero size and sizes past 32 bits.
    static func richManifest() -> VersionManifest {
        var manifest = sampleManifest()
        manifest.files.append(FileRecord(
            path: "Levels/ü/Straße.json", pack: manifest.packs[0].id, entry: "Levels/1/map.json",
            sha256: manifest.files[0].sha256, storedSize: 150, size: 300, headerOffset: 0, method: .deflate))
        manifest.files.append(FileRecord(
            path: "Shared/empty.txt", pack: manifest.packs[1].id, entry: "Shared/empty.txt",
            sha256: String(repeating: "f", count: 64), storedSize: 0, size: 0, headerOffset: 90, method: .stored))
        manifest.packs[0].installedBytes = 5 << 40
        manifest.tags[0].preservationPriority = 0.125
        return manifest
    }

    @Test func roundTripsEveryField() throws {
        for manifest in [sampleManifest(), Self.richManifest()] {
            let compact = manifest.compactEncoded()
            #expect(try VersionManifest(compact: compact) == manifest)
            // Strings are written once: much smaller than the JSON.
            #expect(compact.count < (try manifest.encoded()).count / 2)
        }
    }

    @Test func everyTruncationIsATypedError() throws {
        let compact = Self.richManifest().compactEncoded()
        for length in 0..<compact.count {
            let error = #expect(throws: FormatError.self) { try VersionManifest(compact: compact.prefix(length)) }
            #expect(error?.code == .corruptData, "cut at \(length)")
        }
        var longer = compact
        longer.append(0)
        #expect(throws: FormatError.self) { try VersionManifest(compact: longer) }
    }

    @Test func anotherLayoutOrJSONIsRefused() throws {
        var compact = sampleManifest().compactEncoded()
        compact[4] = 99
        let error = #expect(throws: FormatError.self) { try VersionManifest(compact: compact) }
        #expect(error?.code == .corruptData)
        #expect(throws: FormatError.self) { try VersionManifest(compact: try sampleManifest().encoded()) }
    }

    /// Every damaged byte is caught (the checksum), and is a typed error, never a trap.
    @Test func everyFlippedByteIsATypedError() throws {
        let compact = Self.richManifest().compactEncoded()
        for position in 5..<compact.count {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var damaged = compact
                damaged[position] ^= flip
                let error = #expect(throws: FormatError.self) { try VersionManifest(compact: damaged) }
                #expect(error?.code == .corruptData, "byte \(position) ^ \(flip)")
            }
        }
    }

    @Test func indexFindsFilesWhetherOrNotTheyAreSortedByPath() throws {
        var sorted = Self.richManifest()
        sorted.files.sort { $0.path < $1.path }
        var shuffled = sorted
        shuffled.files.reverse()
        for manifest in [sorted, shuffled] {
            let index = manifest.makeIndex()
            for file in manifest.files { #expect(index.file(atPath: file.path) == file) }
            #expect(index.file(atPath: "Levels/2/map.json") == nil)
            #expect(index.file(atPath: "") == nil)
            #expect(index.file(atPath: "ZZZ") == nil)
            for pack in manifest.packs {
                #expect(index.files(inPack: pack.id) == manifest.files.filter { $0.pack == pack.id })
            }
            #expect(index.files(inPack: "nope").isEmpty)
        }
    }
}
