import Foundation
import ODRBuilder
import ODRFormat
import ODRRuntime

/// The readers of untrusted bytes, each as one fuzz target: the bytes go through the same entry
/// points production uses, and any thrown error is an accepted outcome.
///
/// The libFuzzer executables (`Fuzz/Targets/<name>/`, built by `make fuzz`) and the replay test of
/// the seed corpus and the regression files (`FuzzRegressionTests`) both call ``run(_:)``, so an
/// input that once crashed a fuzzer is replayed by `make test` through exactly the same code.
///
/// ```swift
/// try FuzzTarget.packStream.run(bytes)   // throws FormatError for a bad pack; must never trap
/// ```
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// A pack read as it downloads (``PackStreamReader``), checked against a manifest.
    /// Input: a framed manifest and archive (``FramedPack``).
    case packStream = "pack-stream"
    /// A pack read by byte ranges as the installer plans them (``PackFetchPlan``, ``PackRangeReader``),
    /// then entry by entry from a file (``PackArchive``). Input: a framed manifest and archive.
    case packRange = "pack-range"
    /// The central directory and end records of an archive file (``PackArchive/entries()``, as
    /// `odrpack verify` and `inspect` read them). Input: the archive.
    case centralDirectory = "central-directory"
    /// A version manifest's JSON, decoded and validated (``VersionManifest/decode(from:)``).
    case manifestJSON = "manifest-json"
    /// A manifest's compact form, as the store keeps it, decoded and validated.
    case manifestCompact = "manifest-compact"
    /// A compact manifest as the store keeps it in `manifests/<sha>.odrm` (layouts 5 and 6, which
    /// record the SHA-256 of the JSON they stand for), opened from a file as the store opens it
    /// (``VersionManifest/init(compactFileAt:source:)``, memory-mapped) under ``compactSource``,
    /// validated, then read pack by pack. The input's checksum is made right first
    /// (``VersionManifest/resealedCompact(_:)``): whoever writes the store can do the same, and
    /// otherwise nearly every input would stop at the checksum.
    case manifestCompactFile = "manifest-compact-file"
    /// A split version manifest (format 3, `versions/<n>.json`), decoded and validated
    /// (``SplitManifest/decode(from:)``), then the bins of a few tags looked up.
    case splitManifest = "split-manifest"
    /// A tag bin of a split catalog as served (deflated), decoded and checked (``TagBin/decode(from:pin:index:binCount:file:)``).
    case tagBin = "tag-bin"
    /// A pack's file table of a split catalog as served (deflated), decoded and checked on its own,
    /// then against the bin entry its own contents describe (``PackFileTable/decode(from:pin:expected:file:)``).
    case fileTable = "file-table"
    /// `catalog.json`, decoded, validated and its signatures checked against ``trustedKeys``.
    case catalog = "catalog"
    /// A staging journal (`staging/<id>.journal`) and the fetch plan it leads to, for a fixed pack
    /// with cut entries in staging (``JournalFixture``).
    case journal = "journal"
    /// `odr.json` tag rules, parsed, then matched against a few paths.
    case tagRules = "tag-rules"
    /// HTTP response header lines as curl hands them over (`Content-Range`, `Content-Length`,
    /// `ETag`, `Last-Modified`, status lines).
    case responseHeaders = "response-headers"
    /// The system bus's messages after `BEGIN`, as the NetworkManager probe reads them for the
    /// `Metered` property (``NetworkManagerBusProbe``).
    case dbusReply = "dbus-reply"

    /// Runs one input through the target's production entry points.
    ///
    /// - Throws: whatever those entry points throw for bad input (``FormatError``, ``BuildError``,
    ///   ``ResourceError``); a trap or a hang is the bug a fuzzer looks for.
    package func run(_ bytes: UnsafeRawBufferPointer) throws {
        switch self {
        case .packStream: try Self.packStream(bytes)
        case .packRange: try Self.packRange(bytes)
        case .centralDirectory: try Self.centralDirectory(bytes)
        case .manifestJSON: _ = try VersionManifest.decode(from: Data(bytes)).makeIndex()
        case .manifestCompact:
            let manifest = try VersionManifest(compact: Data(bytes))
            try manifest.validate()
            _ = manifest.makeIndex()
        case .manifestCompactFile:
            let sealed = VersionManifest.resealedCompact(Data(bytes))
            try sealed.withUnsafeBytes { sealed in try ScratchFile.shared.withFile(holding: sealed) { url in
                let manifest = try VersionManifest(compactFileAt: url, source: Self.compactSource)
                try manifest.validate()
                let index = manifest.makeIndex()
                for pack in manifest.packs {
                    _ = index.files(inPack: pack.id)
                    _ = index.expectedEntries(inPack: pack.id)
                }
                for path in Self.samplePaths { _ = index.files(atPath: path) }
            } }
        case .splitManifest:
            let manifest = try SplitManifest.decode(from: Data(bytes))
            _ = manifest.bins(forTags: Self.sampleTags)
        case .tagBin: _ = try TagBin.decode(from: Data(bytes))
        case .fileTable:
            let data = Data(bytes)
            let table = try PackFileTable.decode(from: data)
            let entries = Dictionary(table.files.map { ($0.entry, $0.size) }, uniquingKeysWith: { first, _ in first })
            let pack = PackRecord(id: table.pack, tags: ["t"], archiveBytes: table.files.map { $0.headerOffset.clampedAdding($0.storedSize) }.max() ?? 0,
                                  installedBytes: entries.values.clampedSum(), entryCount: entries.count)
            _ = try PackFileTable.decode(from: data, pin: MetadataPin(of: data),
                                         expected: BinPack(pack: pack, table: MetadataPin(of: data), fileCount: table.files.count))
        case .catalog:
            let index = try CatalogIndex.decode(from: Data(bytes))
            _ = try index.verifySignatures(trusting: Self.trustedKeys)
            _ = index.expiryDate
        case .journal: try JournalFixture.shared.plan(journal: bytes)
        case .tagRules:
            let rules = try TagRules.parse(Data(bytes))
            let matcher = rules.matcher()
            for path in Self.samplePaths {
                _ = matcher.tags(forPath: path)
                _ = rules.isExcluded(path)
            }
        case .responseHeaders:
            var headers = ResponseHeaders()
            for line in Self.lines(bytes) { headers.receive(line) }
        case .dbusReply:
            // The same reader takes Avahi's ResolveService answers (peer discovery, issue 43).
            let resolved = PeerDiscovery.verdict(inResolveReply: [UInt8](bytes), catalogID: "game")
            // And the answers and signals an announcement follows (names taken, issue 43).
            let announced = PeerAnnouncement.status(afterMessages: [UInt8](bytes))
            // No answer is the probe's "unmetered"; as an error here, a seed proves it reaches the value.
            guard NetworkManagerBusProbe.meteredValue(inReplies: [UInt8](bytes)) != nil || resolved != nil
                    || announced?.state == .established else {
                throw ResourceError(.unexpectedResponse, "The bytes hold no reply to the Get call with a u in its variant, no ResolveService answer, and no announcement Avahi establishes.")
            }
        }
    }

    /// Runs `data` through ``run(_:)``.
    package func run(_ data: Data) throws {
        try data.withUnsafeBytes { try run($0) }
    }

    // MARK: - Packs

    private static func packStream(_ bytes: UnsafeRawBufferPointer) throws {
        guard let input = try FramedPack(bytes), let pack = input.pack else { return }
        let reader = PackStreamReader(entries: input.manifest.expectedEntries(inPack: pack.id),
                                      archiveSHA256: pack.id, sink: DiscardingSink())
        for chunk in input.chunks(of: input.archive) { try reader.consume(chunk) }
        try reader.finish()
    }

    private static func packRange(_ bytes: UnsafeRawBufferPointer) throws {
        guard let input = try FramedPack(bytes), let pack = input.pack else { return }
        let entries = input.manifest.expectedEntries(inPack: pack.id)
        var failures = FirstError()
        // As the installer plans a pack with some contents held already (the option byte's bits
        // choose which), so the plan asks for ranges rather than the whole archive.
        let held = Set(entries.enumerated().filter { input.option & (1 << ($0.offset % 8)) != 0 }.map(\.element.sha256))
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: pack.archiveBytes, held: held)
        for fetch in plan.fetches {
            failures.attempt {
                let reader = try PackRangeReader(range: fetch.range, targets: fetch.targets, sink: DiscardingRangeSink(),
                                                 checkingDirectoryOf: fetch.isWholeArchive ? entries : nil)
                let body = input.archive.slice(fetch.range)
                for chunk in input.chunks(of: body) { try reader.consume(chunk) }
                try reader.finish()
            }
        }
        // The same archive read by offset from a file, entry by entry.
        try ScratchFile.shared.withFile(holding: input.archive) { url in
            let archive = try PackArchive(contentsOf: url)
            for entry in entries {
                failures.attempt { _ = try archive.recordRange(of: entry) }
                failures.attempt { try archive.extract(entry, to: DiscardingSink()) }
            }
        }
        try failures.rethrow()
    }

    private static func centralDirectory(_ bytes: UnsafeRawBufferPointer) throws {
        try ScratchFile.shared.withFile(holding: bytes) { url in
            _ = try PackArchive(contentsOf: url).entries()
        }
    }

    // MARK: - Fixed inputs

    /// The key the fuzzed catalogs must be signed with: derived from a published seed, so it
    /// guards nothing; the seed corpus's `catalog.json` files are signed with it.
    package static let signingKeySeed = Data(repeating: 0x5A, count: 32)

    /// The trusted key set of the `catalog` target: the key of ``signingKeySeed``.
    package static let trustedKeys: TrustedKeySet = {
        // A fixed, valid seed and threshold: these cannot fail.
        try! TrustedKeySet(keys: [SigningKey(seed: signingKeySeed).publicKey], threshold: 1)
    }()

    /// The digest the `manifest-compact-file` target opens its input under, as the store opens
    /// `manifests/<digest>.odrm`; its seeds record it (any other is refused, as in a store).
    package static let compactSource = String(repeating: "5a", count: 32)

    /// Tags the `split-manifest` target looks up.
    static let sampleTags = ["small", "big", "level1"]

    /// Paths the fuzzed tag rules are matched against, and the compact manifests looked up.
    static let samplePaths = [
        "Levels/Level1/map.json", "levels/level1/MAP.JSON", "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p.png",
        "Textures/sky@2x.astc", "README.md", ".hidden/file", "x",
    ]

    /// The input's lines, each with its line break, as curl's header callback delivers them.
    static func lines(_ bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        var lines: [UnsafeRawBufferPointer] = []
        var start = 0
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            lines.append(UnsafeRawBufferPointer(rebasing: bytes[start...index]))
            start = index + 1
        }
        if start < bytes.count { lines.append(UnsafeRawBufferPointer(rebasing: bytes[start...])) }
        return lines
    }
}

/// The input of the pack targets: a compact manifest and an archive, framed as
///
/// ```
/// u32 little-endian   manifest length N
/// u8                  option: chunk size of the network (0: all at once), held entries (pack-range)
/// u8                  which pack of the manifest the archive is (its position, modulo the count)
/// N bytes             the manifest, compact form (validated before use, as every manifest is)
/// the rest            the archive
/// ```
package struct FramedPack {
    static let headerSize = 6
    package var manifest: VersionManifest
    package var option: UInt8
    package var packIndex: UInt8
    package var archive: UnsafeRawBufferPointer

    /// The pack the archive is, if the manifest has any.
    var pack: PackRecord? {
        manifest.packs.isEmpty ? nil : manifest.packs[Int(packIndex) % manifest.packs.count]
    }

    /// `nil` when the input is too short to hold the frame.
    ///
    /// - Throws: ``FormatError`` when the manifest is not a valid compact manifest.
    init?(_ bytes: UnsafeRawBufferPointer) throws {
        let header = Self.headerSize
        guard bytes.count >= header else { return nil }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)))
        guard length <= bytes.count - header else { return nil }
        manifest = try VersionManifest(compact: Data(bytes[header..<(header + length)]))
        try manifest.validate()
        option = bytes[4]
        packIndex = bytes[5]
        archive = UnsafeRawBufferPointer(rebasing: bytes[(header + length)...])
    }

    /// Builds an input from its parts (for the seed corpus).
    package static func encode(manifest: Data, option: UInt8, packIndex: UInt8, archive: Data) -> Data {
        var data = Data()
        withUnsafeBytes(of: UInt32(manifest.count).littleEndian) { data.append(contentsOf: $0) }
        data.append(option)
        data.append(packIndex)
        return data + manifest + archive
    }

    /// `bytes` cut into the chunks the option byte chooses, as a network would deliver them.
    func chunks(of bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        let size = option == 0 ? max(bytes.count, 1) : Int(option) * 61 + 1
        return stride(from: 0, to: bytes.count, by: size).map {
            UnsafeRawBufferPointer(rebasing: bytes[$0..<min($0 + size, bytes.count)])
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes of `range` that the buffer holds (a server may send fewer than asked for).
    func slice(_ range: Range<Int64>) -> UnsafeRawBufferPointer {
        let lower = Int(clamping: Swift.max(0, Swift.min(range.lowerBound, Int64(count))))
        let upper = Int(clamping: Swift.max(Int64(lower), Swift.min(range.upperBound, Int64(count))))
        return UnsafeRawBufferPointer(rebasing: self[lower..<upper])
    }
}

/// Keeps the first error of several independent attempts, so that one failure does not hide the
/// code after it from the fuzzer.
struct FirstError {
    private var error: (any Error)?

    mutating func attempt(_ body: () throws -> Void) {
        do { try body() } catch { if self.error == nil { self.error = error } }
    }

    func rethrow() throws {
        if let error { throw error }
    }
}

/// A range sink that keeps nothing.
final class DiscardingRangeSink: PackRangeSink {
    func entryDataStarts(_ entry: PackEntryExpectation, at dataOffset: Int64) throws {}
    func resumeEntry(_ entry: PackEntryExpectation, heldBytes: Int64) throws {}
    func beginEntry(_ entry: PackEntryExpectation) throws {}
    func writeEntryData(_ bytes: UnsafeRawBufferPointer) throws {}
    func endEntry(_ entry: PackEntryExpectation) throws {}
}
