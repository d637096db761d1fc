import Foundation
import ODRFormat

extension CatalogReport {
    /// Stored files at least this large are sampled to see whether they would compress after all.
    static let compressionSampleMinimum: Int64 = 128 << 10
    /// How many of the largest stored files are sampled, at most.
    static let compressionSampleCount = 32
    /// A stored file whose sample deflates to at most this share of its size "compresses well"; a
    /// deflated file stored at more than this share "compresses poorly".
    static let compressesWellRatio = 0.8
    static let compressesPoorlyRatio = 0.9

    /// Warnings about the compression choice the pack writer made from each file's first 64 KiB:
    /// large stored files whose middle compresses well (the start looked random, the rest is not),
    /// and deflated files that save under 10% (inflating them costs the installer time for little).
    ///
    /// Samples at most ``compressionSampleCount`` files, 64 KiB each, from the packs on disk; a
    /// pack missing from the folder is skipped (`odrpack verify` reports it).
    static func compressionWarnings(of manifest: VersionManifest, in catalog: CatalogDirectory) -> [BuildWarning] {
        var warnings: [BuildWarning] = []
        var seen = Set<String>()
        let stored = manifest.files
            .filter { $0.method == .stored && $0.size >= compressionSampleMinimum && seen.insert($0.sha256).inserted }
            .sorted { ($1.size, $0.path) < ($0.size, $1.path) }
            .prefix(compressionSampleCount)
        let compressible = stored.filter { file in
            guard let ratio = sampleRatio(of: file, in: catalog) else { return false }
            return ratio <= compressesWellRatio
        }
        if !compressible.isEmpty {
            warnings.append(BuildWarning(
                .storedCompressible,
                "\(compressible.count) large file(s) stored uncompressed compress by 20% or more past their first 64 KiB "
                    + "(the part the pack writer samples): " + describe(compressible.map { $0 })))
        }
        let poor = manifest.files
            .filter { $0.method == .deflate && $0.size >= 64 << 10 && Double($0.storedSize) > Double($0.size) * compressesPoorlyRatio }
            .sorted { ($1.size, $0.path) < ($0.size, $1.path) }
        if !poor.isEmpty {
            // The tags holding them, most files first: the rules to give "compression": "store".
            let tagsOfPack = Dictionary(manifest.packs.map { ($0.id, $0.tags) }) { first, _ in first }
            var filesPerTag: [String: Int] = [:]
            for file in poor { for tag in tagsOfPack[file.pack] ?? [] { filesPerTag[tag, default: 0] += 1 } }
            let tags = filesPerTag.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map(\.key)
            let rules = tags.prefix(3).map { "\"\($0)\"" }.joined(separator: ", ") + (tags.count > 3 ? ", ..." : "")
            warnings.append(BuildWarning(
                .deflatedPoorly,
                "\(poor.count) file(s) deflated save under 10% (installing them inflates for little gain; "
                    + "already-compressed formats belong stored): " + describe(Array(poor.prefix(listLimit)))
                    + (poor.count > listLimit ? ", ..." : "")
                    + "; add \"compression\": \"store\" to the rule of \(tags.count == 1 ? "tag" : "tags") \(rules) in odr.json to store them"))
        }
        return warnings
    }

    private static func describe(_ files: [FileRecord]) -> String {
        files.prefix(5).map { "\($0.path) (\(ByteCount.format($0.size)), stored as \(ByteCount.format($0.storedSize)))" }
            .joined(separator: ", ") + (files.count > 5 ? ", ..." : "")
    }

    /// What 64 KiB from the middle of a stored file deflate to, as a share of 64 KiB, using the pack
    /// writer's own choice (it stores what saves under 5%); `nil` when the pack cannot be read.
    private static func sampleRatio(of file: FileRecord, in catalog: CatalogDirectory) -> Double? {
        let entry = PackEntryExpectation(
            name: file.entry, method: file.method, storedSize: file.storedSize, size: file.size, headerOffset: file.headerOffset,
            sha256: file.sha256)
        let scratch = FileManager.default.temporaryDirectory.appending(path: ".odrpack-sample-\(UUID().uuidString).zip")
        defer { try? FileManager.default.removeItem(at: scratch) }
        do {
            let archive = try PackArchive(contentsOf: catalog.packURL(id: file.pack))
            let record = try archive.recordRange(of: entry)
            let sampleSize: Int64 = 64 << 10
            let start = record.upperBound - file.storedSize + max(0, file.storedSize / 2 - sampleSize / 2)
            let handle = try FileHandle(forReadingFrom: archive.url)
            defer { try? handle.close() }
            guard start >= 0 else { return nil }
            try handle.seek(toOffset: UInt64(start))
            guard let sample = try handle.read(upToCount: Int(sampleSize)), !sample.isEmpty else { return nil }
            let writer = try PackWriter(creating: scratch)
            let written = try writer.addEntry(named: "sample", data: sample)
            _ = try writer.finish()
            return Double(written.storedSize) / Double(sample.count)
        } catch {
            return nil
        }
    }
}
