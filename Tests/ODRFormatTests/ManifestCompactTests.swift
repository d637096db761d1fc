import Foundation
@testable import ODRFormat
import ODRTestSupport
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
            let compact = try manifest.compactEncoded()
            #expect(try VersionManifest(compact: compact) == manifest)
            // Strings are written once: much smaller than the JSON.
            #expect(compact.count < (try manifest.encoded()).count / 2)
        }
    }

    @Test func everyTruncationIsATypedError() throws {
        let compact = try Self.richManifest().compactEncoded()
        for length in 0..<compact.count {
            let error = #expect(throws: FormatError.self) { try VersionManifest(compact: compact.prefix(length)) }
            #expect(error?.code == .corruptData, "cut at \(length)")
        }
        var longer = compact
        longer.append(0)
        #expect(throws: FormatError.self) { try VersionManifest(compact: longer) }
    }

    @Test func anotherLayoutOrJSONIsRefused() throws {
        var compact = try sampleManifest().compactEncoded()
        compact[4] = 99
        let error = #expect(throws: FormatError.self) { try VersionManifest(compact: compact) }
        #expect(error?.code == .corruptData)
        #expect(throws: FormatError.self) { try VersionManifest(compact: try sampleManifest().encoded()) }
    }

    /// Every damaged byte is caught (the checksum), and is a typed error, never a trap.
    @Test func everyFlippedByteIsATypedError() throws {
        let compact = try Self.richManifest().compactEncoded()
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
        // Each also decoded from the compact form, whose index reads files from the bytes.
        let decoded = try [sorted, shuffled].map { try VersionManifest(compact: try $0.compactEncoded()) }
        for manifest in [sorted, shuffled] + decoded {
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

    /// A path spelled with decomposed characters finds the file listed with precomposed ones, as
    /// `String` equality does, whether the index reads records or compact bytes.
    @Test func canonicallyEquivalentPathsFindTheSameFile() throws {
        let manifest = Self.richManifest()
        let decomposed = "Levels/u\u{308}/Stra\u{df}e.json"
        #expect(Array(decomposed.utf8) != Array("Levels/ü/Straße.json".utf8))
        for candidate in [manifest, try VersionManifest(compact: try manifest.compactEncoded())] {
            #expect(candidate.makeIndex().file(atPath: decomposed)?.size == 300)
            #expect(candidate.makeIndex().file(atPath: "Levels/\u{fc}/Other.json") == nil)
        }
    }

    /// Only a valid manifest has a compact form: a digest that is not hex, or a file in a pack the
    /// manifest does not list, is a typed error.
    @Test func encodingRefusesWhatValidationWould() throws {
        var badDigest = Self.richManifest()
        badDigest.files[0].sha256 = String(repeating: "G", count: 64)
        #expect(throws: FormatError.self) { try badDigest.compactEncoded() }
        var unknownPack = Self.richManifest()
        unknownPack.files[0].pack = String(repeating: "0", count: 64)
        let error = #expect(throws: FormatError.self) { try unknownPack.compactEncoded() }
        #expect(error?.code == .danglingReference)
    }

    /// Bytes with a correct checksum but an offset out of range (which only a crafted copy could
    /// have) are refused when decoded, or, where any value is in range, read without a trap.
    @Test func checksummedButOutOfRangeBytesNeverTrap() throws {
        let manifest = Self.richManifest()
        let compact = try manifest.compactEncoded()
        var refused = 0
        for position in 13..<compact.count {
            for value: UInt8 in [0x00, 0xFF] where compact[position] != value {
                var crafted = compact
                crafted[position] = value
                Self.resum(&crafted)
                do {
                    let decoded = try VersionManifest(compact: crafted)
                    let index = decoded.makeIndex()
                    for file in manifest.files { _ = index.file(atPath: file.path) }
                    for pack in decoded.packs { _ = index.files(inPack: pack.id) }
                    _ = decoded.files
                } catch {
                    #expect(error.code == .corruptData, "byte \(position) = \(value)")
                    refused += 1
                }
            }
        }
        #expect(refused > 0)
        // The last four bytes are a file position in the by-pack list: out of range is refused.
        var crafted = compact
        for i in (crafted.count - 4)..<crafted.count { crafted[i] = 0xFF }
        Self.resum(&crafted)
        let error = #expect(throws: FormatError.self) { try VersionManifest(compact: crafted) }
        #expect(error?.code == .corruptData)
    }

    /// A compact file is memory-mapped and decodes to the same manifest; a missing file is an `io`
    /// error and an empty or damaged one `corrupt-data`, never a crash.
    @Test func aCompactFileIsMappedAndBadFilesAreTypedErrors() throws {
        let directory = try TemporaryDirectory(prefix: "odr-compact")
        let manifest = Self.richManifest()
        let file = directory.appending("manifest.odrm")
        try manifest.compactEncoded().write(to: file)
        let decoded = try VersionManifest(compactFileAt: file)
        #expect(decoded == manifest)
        #expect(decoded.makeIndex().file(atPath: manifest.files[0].path) == manifest.files[0])

        let missing = #expect(throws: FormatError.self) { try VersionManifest(compactFileAt: directory.appending("none.odrm")) }
        #expect(missing?.code == .io)
        #expect(missing?.message.contains("none.odrm") == true)
        try Data().write(to: file)
        let empty = #expect(throws: FormatError.self) { try VersionManifest(compactFileAt: file) }
        #expect(empty?.code == .corruptData)
        try Data("ODRM\u{2}not a manifest".utf8).write(to: file)
        let damaged = #expect(throws: FormatError.self) { try VersionManifest(compactFileAt: file) }
        #expect(damaged?.code == .corruptData)
    }

    /// Rewrites the checksum of a compact manifest after its bytes were changed on purpose.
    static func resum(_ compact: inout Data) {
        let checksum = compact.dropFirst(13).withUnsafeBytes { WordChecksum.of($0) }
        for i in 0..<8 { compact[5 + i] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(i))) }
    }
}
