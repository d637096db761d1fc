#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The files of a manifest decoded from its compact form, read from the bytes only when asked for.
///
/// A large catalog lists 100,000 files; building a ``FileRecord`` (four strings) for each of them
/// was most of the time it took to open a store. The compact form therefore keeps files as
/// fixed-width records, sorted by path (or with a sorted order next to them) and grouped by pack,
/// so ``ManifestIndex`` finds one file, or one pack's files, by reading only those records.
/// ``VersionManifest/files`` still offers every record, built on first use.
///
/// Record layout (little-endian), ``recordWidth`` bytes each: path offset and length, entry offset
/// and length (both into the string heap), the pack's position in the manifest's packs, the raw
/// SHA-256 (32 bytes), stored size, size, header offset (8 bytes each), then the method (0 stored,
/// 1 deflate). After the records: the heap, the file positions in path order (only when the
/// manifest's own order is not the UTF-8 byte order of paths), each pack's first position in the
/// by-pack list (one more than there are packs), and the by-pack list of file positions.
///
/// In a chunked layout (``VersionManifest`` compact layout 4, written only when a file has chunks)
/// the header also holds the total chunk count, and after the by-pack list come each file's first
/// chunk number (one more than there are files) and the chunk records: size, stored size (8 bytes
/// each) and the raw SHA-256, ``chunkWidth`` bytes each.
final class CompactFileTable: Sendable {
    static let recordWidth = 77
    static let chunkWidth = 48

    /// The whole compact manifest; the offsets below are relative to its first byte.
    private let data: Data
    /// The number of files.
    let count: Int
    /// The ids of the manifest's packs, by position: what a record's pack number refers to.
    private let packIDs: [String]
    /// The variants of the manifest's packs, by position: a file's variant is its pack's.
    private let packVariants: [Variant]
    private let recordsStart: Int
    private let heapStart: Int
    private let heapLength: Int
    /// Where the path order starts, or `nil` when the records themselves are in path order.
    private let orderStart: Int?
    private let packStartsStart: Int
    private let packFilesStart: Int
    /// Where the chunk starts and records begin, or `nil` in a layout without chunks.
    private let chunkStartsStart: Int?
    private let chunkRecordsStart: Int
    /// Every record, once something asked for all of them.
    private let materialized = Locked<[FileRecord]?>(nil)

    /// Reads the file section that starts at `offset` of `raw` (the bytes of `data`) and checks
    /// that every offset in it stays inside the bytes, so later reads cannot go out of bounds, and
    /// that every size and offset is one a validated manifest can hold (not negative, inside its
    /// pack's `packArchiveBytes`), so code that adds them up cannot overflow.
    ///
    /// - Throws: ``CompactReader/corrupt`` when the section does not end exactly at the end of the
    ///   bytes, or a record points outside them or holds an impossible size.
    init(data: Data, raw: UnsafeRawBufferPointer, reader: inout CompactReader, packIDs: [String], packVariants: [Variant],
         packArchiveBytes: [Int64], chunked: Bool = false) throws(FormatError) {
        self.data = data
        self.packIDs = packIDs
        self.packVariants = packVariants
        count = try reader.count()
        let inPathOrder = try reader.byte()
        heapLength = try reader.count()
        let chunkCount = chunked ? try reader.count() : 0
        guard inPathOrder <= 1 else { throw CompactReader.corrupt }
        let remaining = raw.count - reader.offset
        // Checked although count() bounds each by the bytes left: a lie must fail, never trap.
        func product(_ a: Int, _ b: Int) throws(FormatError) -> Int {
            let (value, overflow) = a.multipliedReportingOverflow(by: b)
            guard !overflow else { throw CompactReader.corrupt }
            return value
        }
        func sum(_ a: Int, _ b: Int) throws(FormatError) -> Int {
            let (value, overflow) = a.addingReportingOverflow(b)
            guard !overflow else { throw CompactReader.corrupt }
            return value
        }
        let recordBytes = try product(count, Self.recordWidth)
        let orderBytes = inPathOrder == 1 ? 0 : try product(4, count)
        let packBytes = try sum(try product(4, try sum(packIDs.count, 1)), try product(4, count))
        let chunkBytes = chunked ? try sum(try product(4, try sum(count, 1)), try product(Self.chunkWidth, chunkCount)) : 0
        guard recordBytes <= remaining,
              remaining - recordBytes == (try sum(heapLength, try sum(orderBytes, try sum(packBytes, chunkBytes)))) else {
            throw CompactReader.corrupt
        }
        recordsStart = reader.offset
        heapStart = recordsStart + recordBytes
        orderStart = inPathOrder == 1 ? nil : heapStart + heapLength
        packStartsStart = heapStart + heapLength + orderBytes
        packFilesStart = packStartsStart + 4 * (packIDs.count + 1)
        chunkStartsStart = chunked ? packFilesStart + 4 * count : nil
        chunkRecordsStart = packFilesStart + 4 * count + (chunked ? 4 * (count + 1) : 0)
        reader.offset = raw.count
        try check(raw, packArchiveBytes: packArchiveBytes, chunkCount: chunkCount)
    }

    private func check(_ raw: UnsafeRawBufferPointer, packArchiveBytes: [Int64], chunkCount: Int) throws(FormatError) {
        if let chunkStartsStart {
            // Each file's chunks follow the previous file's; every table obeys FileChunk.validate.
            guard raw.u32(chunkStartsStart) == 0, raw.u32(chunkStartsStart + 4 * count) == chunkCount else { throw CompactReader.corrupt }
            for position in 0..<count {
                let start = raw.u32(chunkStartsStart + 4 * position), end = raw.u32(chunkStartsStart + 4 * (position + 1))
                guard start <= end, end <= chunkCount else { throw CompactReader.corrupt }
                guard start < end else { continue }
                let base = recordsStart + position * Self.recordWidth
                let method: CompressionMethod = raw[base + 76] == 0 ? .stored : .deflate
                do {
                    try FileChunk.validate(chunks(at: position, raw), size: raw.i64(base + 60), storedSize: raw.i64(base + 52),
                                           method: method, path: "", field: "files[\(position)]")
                } catch {
                    throw CompactReader.corrupt
                }
            }
        }
        for position in 0..<count {
            let base = recordsStart + position * Self.recordWidth
            let path = raw.u32(base) + raw.u32(base + 4), entry = raw.u32(base + 8) + raw.u32(base + 12)
            guard path <= heapLength, entry <= heapLength, raw.u32(base + 16) < packIDs.count,
                  raw[base + 76] <= 1 else { throw CompactReader.corrupt }
            // The placement rule of VersionManifest.validate(), as subtractions that cannot overflow.
            let archiveBytes = packArchiveBytes[raw.u32(base + 16)]
            let storedSize = raw.i64(base + 52), size = raw.i64(base + 60), headerOffset = raw.i64(base + 68)
            guard storedSize >= 0, size >= 0, headerOffset >= 0, headerOffset <= archiveBytes,
                  storedSize <= archiveBytes - headerOffset else { throw CompactReader.corrupt }
        }
        if let orderStart {
            for i in 0..<count where raw.u32(orderStart + 4 * i) >= count { throw CompactReader.corrupt }
        }
        var previous = 0
        for p in 0...packIDs.count {
            let start = raw.u32(packStartsStart + 4 * p)
            guard start >= previous, start <= count, p > 0 || start == 0 else { throw CompactReader.corrupt }
            previous = start
        }
        guard previous == count else { throw CompactReader.corrupt }
        for i in 0..<count where raw.u32(packFilesStart + 4 * i) >= count { throw CompactReader.corrupt }
    }

    /// Every file, in manifest order.
    var records: [FileRecord] {
        materialized.withLock { cached in
            if let cached { return cached }
            let all = data.withUnsafeBytes { raw in (0..<count).map { record(at: $0, raw) } }
            cached = all
            return all
        }
    }

    /// Every file at `path` (the variants of one logical path), in path order, comparing UTF-8
    /// bytes; a path spelled with other but canonically equivalent Unicode scalars is found too, as
    /// `String` comparison would.
    func files(atPath path: String) -> [FileRecord] {
        var query = path
        let found: [FileRecord] = query.withUTF8 { query in
            data.withUnsafeBytes { raw in
                var low = 0, high = count
                while low < high {
                    let middle = (low + high) / 2
                    if compare(pathOf: position(inPathOrder: middle, raw), query, raw) < 0 { low = middle + 1 } else { high = middle }
                }
                var found: [FileRecord] = []
                while low < count, case let position = position(inPathOrder: low, raw), compare(pathOf: position, query, raw) == 0 {
                    found.append(record(at: position, raw))
                    low += 1
                }
                return found
            }
        }
        guard found.isEmpty, path.utf8.contains(where: { $0 >= 0x80 }) else { return found }
        return data.withUnsafeBytes { raw in
            (0..<count).compactMap { position in
                let bytes = string(raw, at: recordsStart + position * Self.recordWidth)
                guard bytes.contains(where: { $0 >= 0x80 }), String(decoding: bytes, as: UTF8.self) == path else { return nil }
                return record(at: position, raw)
            }
        }
    }

    /// The files of the pack at position `pack` of the manifest's packs, in manifest order.
    func files(inPackAt pack: Int) -> [FileRecord] {
        data.withUnsafeBytes { raw in
            let start = raw.u32(packStartsStart + 4 * pack), end = raw.u32(packStartsStart + 4 * (pack + 1))
            return (start..<end).map { record(at: raw.u32(packFilesStart + 4 * $0), raw) }
        }
    }

    private func position(inPathOrder index: Int, _ raw: UnsafeRawBufferPointer) -> Int {
        guard let orderStart else { return index }
        return raw.u32(orderStart + 4 * index)
    }

    /// The heap bytes named by the offset and length at `field`.
    private func string(_ raw: UnsafeRawBufferPointer, at field: Int) -> UnsafeRawBufferPointer {
        let start = heapStart + raw.u32(field)
        return UnsafeRawBufferPointer(rebasing: raw[start..<(start + raw.u32(field + 4))])
    }

    private func compare(pathOf position: Int, _ query: UnsafeBufferPointer<UInt8>, _ raw: UnsafeRawBufferPointer) -> Int {
        let path = string(raw, at: recordsStart + position * Self.recordWidth)
        let common = min(path.count, query.count)
        if common > 0, let a = path.baseAddress, let b = query.baseAddress {
            let order = memcmp(a, b, common)
            if order != 0 { return Int(order) }
        }
        return path.count - query.count
    }

    private func record(at position: Int, _ raw: UnsafeRawBufferPointer) -> FileRecord {
        let base = recordsStart + position * Self.recordWidth
        let path = String(decoding: string(raw, at: base), as: UTF8.self)
        let samePlace = raw.u32(base) == raw.u32(base + 8) && raw.u32(base + 4) == raw.u32(base + 12)
        let pack = raw.u32(base + 16)
        return FileRecord(
            path: path, pack: packIDs[pack],
            entry: samePlace ? path : String(decoding: string(raw, at: base + 8), as: UTF8.self),
            sha256: ContentHash.hex(UnsafeRawBufferPointer(rebasing: raw[(base + 20)..<(base + 52)])),
            storedSize: raw.i64(base + 52), size: raw.i64(base + 60), headerOffset: raw.i64(base + 68),
            method: raw[base + 76] == 0 ? .stored : .deflate, variant: packVariants[pack], chunks: chunks(at: position, raw))
    }

    /// The chunks of the file at `position`; none in a layout without chunks.
    private func chunks(at position: Int, _ raw: UnsafeRawBufferPointer) -> [FileChunk] {
        guard let chunkStartsStart else { return [] }
        let start = raw.u32(chunkStartsStart + 4 * position), end = raw.u32(chunkStartsStart + 4 * (position + 1))
        return (start..<end).map { number in
            let base = chunkRecordsStart + number * Self.chunkWidth
            return FileChunk(size: raw.i64(base), storedSize: raw.i64(base + 8),
                             sha256: ContentHash.hex(UnsafeRawBufferPointer(rebasing: raw[(base + 16)..<(base + 48)])))
        }
    }

    /// Appends the file section for `files` (whose packs are `packs`) to `output`; with the chunk
    /// section when `chunked` (which ``VersionManifest`` sets when any file has chunks).
    ///
    /// - Throws: ``FormatError`` `invalid-value` for a digest that is not 64 lowercase hex digits,
    ///   or a file whose pack is not among `packs`: the compact form is for valid manifests only.
    static func encode(_ files: [FileRecord], packs: [PackRecord], chunked: Bool = false, into output: inout ByteWriter) throws(FormatError) {
        var packPositions: [String: Int] = [:]
        packPositions.reserveCapacity(packs.count)
        for (position, pack) in packs.enumerated() where packPositions[pack.id] == nil { packPositions[pack.id] = position }
        var heap = ByteWriter()
        var placed: [String: (offset: UInt32, length: UInt32)] = [:]
        func place(_ string: String) throws(FormatError) -> (offset: UInt32, length: UInt32) {
            if let known = placed[string] { return known }
            guard let offset = UInt32(exactly: heap.bytes.count), let length = UInt32(exactly: string.utf8.count) else {
                throw FormatError(.invalidValue, "The manifest's paths take more than 4 GiB; it has no compact form.")
            }
            heap.append(string.utf8)
            placed[string] = (offset, length)
            return (offset, length)
        }
        var records = ByteWriter()
        records.bytes.reserveCapacity(files.count * recordWidth)
        var byPack = [[UInt32]](repeating: [], count: packs.count)
        for (position, file) in files.enumerated() {
            guard let pack = packPositions[file.pack] else {
                throw FormatError(.danglingReference, "'\(file.path)' is in pack \(file.pack), which the manifest does not list.", field: "files[\(position)].pack")
            }
            guard let digest = HexDigest.bytes(ofSHA256: file.sha256) else {
                throw FormatError(.invalidValue, "A file's sha256 must be 64 lowercase hex digits.", field: "files[\(position)].sha256")
            }
            let path = try place(file.path), entry = try place(file.entry)
            records.u32(path.offset)
            records.u32(path.length)
            records.u32(entry.offset)
            records.u32(entry.length)
            records.u32(UInt32(pack))
            records.append(digest)
            records.u64(UInt64(bitPattern: file.storedSize))
            records.u64(UInt64(bitPattern: file.size))
            records.u64(UInt64(bitPattern: file.headerOffset))
            records.bytes.append(file.method == .stored ? 0 : 1)
            byPack[pack].append(UInt32(position))
        }
        let order = files.indices.sorted { files[$0].path.utf8.lexicographicallyPrecedes(files[$1].path.utf8) }
        let inPathOrder = order.elementsEqual(files.indices)
        output.varint(files.count)
        output.bytes.append(inPathOrder ? 1 : 0)
        output.varint(heap.bytes.count)
        let chunkCount = chunked ? files.reduce(0) { $0 + $1.chunks.count } : 0
        guard UInt32(exactly: chunkCount) != nil else {
            throw FormatError(.invalidValue, "The manifest has more than 2^32 chunks; it has no compact form.")
        }
        if chunked { output.varint(chunkCount) }
        output.append(records.bytes)
        output.append(heap.bytes)
        if !inPathOrder { for position in order { output.u32(UInt32(position)) } }
        var start: UInt32 = 0
        output.u32(start)
        for list in byPack {
            start += UInt32(list.count)
            output.u32(start)
        }
        for list in byPack { for position in list { output.u32(position) } }
        guard chunked else { return }
        var first: UInt32 = 0
        output.u32(first)
        for file in files {
            first += UInt32(file.chunks.count)
            output.u32(first)
        }
        for (position, file) in files.enumerated() {
            for (i, chunk) in file.chunks.enumerated() {
                guard let digest = HexDigest.bytes(ofSHA256: chunk.sha256) else {
                    throw FormatError(.invalidValue, "A chunk's sha256 must be 64 lowercase hex digits.", field: "files[\(position)].chunks[\(i)].sha256")
                }
                output.u64(UInt64(bitPattern: chunk.size))
                output.u64(UInt64(bitPattern: chunk.storedSize))
                output.append(digest)
            }
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The little-endian `UInt32` at `offset`, as an `Int`.
    fileprivate func u32(_ offset: Int) -> Int { Int(loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian) }
    /// The little-endian `Int64` at `offset`.
    fileprivate func i64(_ offset: Int) -> Int64 { Int64(littleEndian: loadUnaligned(fromByteOffset: offset, as: Int64.self)) }
}
