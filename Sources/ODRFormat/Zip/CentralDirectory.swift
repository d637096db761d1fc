/// One record of a ZIP central directory.
struct CentralRecord {
    var name: String
    var flags: UInt16
    var method: UInt16
    var crc32: UInt32
    var compressedSize: Int64
    var uncompressedSize: Int64
    var headerOffset: Int64
    var versionMadeBy: UInt16
    var externalAttributes: UInt32

    /// Whether the attributes describe a regular file (not a symlink, device, FIFO or directory).
    var isRegularFile: Bool {
        let host = versionMadeBy >> 8
        if host == 3 {  // Unix: the mode is in the high 16 bits
            let type = (externalAttributes >> 16) & 0o170000
            return type == 0 || type == 0o100000
        }
        return externalAttributes & 0x10 == 0  // MS-DOS directory attribute
    }
}

/// The end records of a ZIP archive, normalized across ZIP and ZIP64.
struct EndOfCentralDirectory {
    var entryCount: Int64
    var directorySize: Int64
    var directoryOffset: Int64
}

enum CentralDirectory {
    /// Parses consecutive central records at the start of `bytes`; returns them and where they end.
    static func parseRecords(_ bytes: [UInt8], limit: Int) throws -> (records: [CentralRecord], end: Int) {
        var reader = ByteReader(bytes)
        var records: [CentralRecord] = []
        while reader.remaining >= 4 {
            let start = reader.offset
            guard reader.u32() == ZipFormat.centralHeaderSignature else {
                reader.offset = start
                break
            }
            guard records.count < limit else {
                throw FormatError(.unexpectedEntry, "The central directory lists more entries than the manifest.", field: nil)
            }
            guard reader.remaining >= ZipFormat.centralHeaderSize - 4 else { throw truncatedDirectory() }
            let madeBy = reader.u16()
            _ = reader.u16()  // version needed
            let flags = reader.u16()
            let method = reader.u16()
            _ = reader.u16(); _ = reader.u16()  // time, date
            let crc = reader.u32()
            var compressed = Int64(reader.u32())
            var uncompressed = Int64(reader.u32())
            let nameLength = Int(reader.u16())
            let extraLength = Int(reader.u16())
            let commentLength = Int(reader.u16())
            _ = reader.u16(); _ = reader.u16()  // disk, internal attributes
            let external = reader.u32()
            var offset = Int64(reader.u32())
            guard reader.remaining >= nameLength + extraLength + commentLength else { throw truncatedDirectory() }
            let nameBytes = Array(reader.take(nameLength))
            let extra = Array(reader.take(extraLength))
            _ = reader.take(commentLength)
            guard let name = String(validating: nameBytes, as: UTF8.self) else {
                throw FormatError(.unsafeEntryName, "A central directory name is not valid UTF-8.", field: nil)
            }
            try Zip64Extra.resolve(extra, uncompressed: &uncompressed, compressed: &compressed, offset: &offset, entry: name)
            records.append(CentralRecord(
                name: name, flags: flags, method: method, crc32: crc, compressedSize: compressed,
                uncompressedSize: uncompressed, headerOffset: offset, versionMadeBy: madeBy,
                externalAttributes: external))
        }
        return (records, reader.offset)
    }

    /// Finds and parses the end records in the last bytes of an archive.
    ///
    /// - Parameters:
    ///   - tail: the archive's last bytes (at least the end record; up to 64 KiB + 98 bytes).
    ///   - tailOffset: the offset of `tail` in the archive.
    static func parseEnd(_ tail: [UInt8], tailOffset: Int64) throws -> EndOfCentralDirectory {
        guard tail.count >= ZipFormat.endOfCentralDirectorySize else {
            throw FormatError(.malformedArchive, "The pack is too short to be a ZIP archive.", field: nil)
        }
        var position = tail.count - ZipFormat.endOfCentralDirectorySize
        while position >= 0 {
            var probe = ByteReader(tail, offset: position)
            if probe.u32() == ZipFormat.endOfCentralDirectorySignature { break }
            position -= 1
        }
        guard position >= 0 else {
            throw FormatError(.malformedArchive, "No end-of-central-directory record: this is not a complete ZIP archive.", field: nil)
        }
        var reader = ByteReader(tail, offset: position + 4)
        _ = reader.u16(); _ = reader.u16()  // disk numbers
        _ = reader.u16()
        var count = Int64(reader.u16())
        var size = Int64(reader.u32())
        var offset = Int64(reader.u32())
        if count == 0xFFFF || size == 0xFFFF_FFFF || offset == 0xFFFF_FFFF {
            let locator = position - ZipFormat.zip64LocatorSize
            var loc = ByteReader(tail, offset: max(locator, 0))
            guard locator >= 0, loc.u32() == ZipFormat.zip64LocatorSignature else {
                throw FormatError(.malformedArchive, "The archive needs ZIP64 end records but has none.", field: nil)
            }
            _ = loc.u32()
            // The locator's offset is any 64-bit number: compared unsigned, never converted first.
            let declared = loc.u64()
            guard tailOffset >= 0, locator >= ZipFormat.zip64EndSize, declared >= UInt64(tailOffset),
                  declared - UInt64(tailOffset) <= UInt64(locator - ZipFormat.zip64EndSize) else {
                throw FormatError(.malformedArchive, "The ZIP64 end record is not where its locator says.", field: nil)
            }
            var end = ByteReader(tail, offset: Int(declared - UInt64(tailOffset)))
            guard end.u32() == ZipFormat.zip64EndSignature else {
                throw FormatError(.malformedArchive, "The ZIP64 end record is missing.", field: nil)
            }
            _ = end.u64(); _ = end.u16(); _ = end.u16(); _ = end.u32(); _ = end.u32()
            _ = end.u64()
            guard let count64 = Int64(exactly: end.u64()), let size64 = Int64(exactly: end.u64()),
                  let offset64 = Int64(exactly: end.u64()) else {
                throw FormatError(.malformedArchive, "The ZIP64 end record declares a count, size or offset beyond 2^63-1; this is not a valid pack.", field: nil)
            }
            (count, size, offset) = (count64, size64, offset64)
        }
        return EndOfCentralDirectory(entryCount: count, directorySize: size, directoryOffset: offset)
    }

    /// Checks the central directory against the entries the manifest expects, in archive order.
    static func check(_ records: [CentralRecord], against expected: [PackEntryExpectation]) throws {
        var names = Set<String>()
        for record in records where !names.insert(record.name).inserted {
            throw FormatError(.duplicateEntry, "Entry '\(record.name)' appears twice in the archive.", field: record.name)
        }
        for record in records where !record.isRegularFile {
            throw FormatError(.unsupportedEntryType, "Entry '\(record.name)' is not a regular file (a symbolic link, device or directory); packs hold only files.", field: record.name)
        }
        let ordered = records.sorted { $0.headerOffset < $1.headerOffset }
        guard ordered.count == expected.count else {
            throw FormatError(.unexpectedEntry, "The central directory lists \(ordered.count) entries; the manifest expects \(expected.count).", field: nil)
        }
        for (record, entry) in zip(ordered, expected) {
            guard record.name == entry.name, record.headerOffset == entry.headerOffset,
                  record.method == entry.method.zipMethod, record.compressedSize == entry.storedSize,
                  record.uncompressedSize == entry.size else {
                throw FormatError(.entryMismatch, "The central directory entry '\(record.name)' disagrees with the manifest's '\(entry.name)'.", field: record.name)
            }
        }
    }

    private static func truncatedDirectory() -> FormatError {
        FormatError(.truncated, "The central directory is cut short; the pack is incomplete.", field: nil)
    }
}
