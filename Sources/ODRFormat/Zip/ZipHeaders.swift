/// The ZIP record layouts packs use, in one place for the writer and both readers.
///
/// All integers are little-endian. See APPNOTE.TXT sections 4.3.7 (local header), 4.3.12 (central
/// directory header), 4.3.14-16 (ZIP64 end records) and 4.5.3 (ZIP64 extra field).
enum ZipFormat {
    static let localHeaderSignature: UInt32 = 0x0403_4B50
    static let centralHeaderSignature: UInt32 = 0x0201_4B50
    static let endOfCentralDirectorySignature: UInt32 = 0x0605_4B50
    static let zip64EndSignature: UInt32 = 0x0606_4B50
    static let zip64LocatorSignature: UInt32 = 0x0706_4B50
    static let dataDescriptorSignature: UInt32 = 0x0807_4B50
    static let zip64ExtraID: UInt16 = 0x0001

    static let localHeaderSize = 30
    static let centralHeaderSize = 46
    static let endOfCentralDirectorySize = 22
    static let zip64EndSize = 56
    static let zip64LocatorSize = 20

    /// General-purpose flag bits.
    static let flagEncrypted: UInt16 = 1 << 0
    static let flagDataDescriptor: UInt16 = 1 << 3
    static let flagStrongEncryption: UInt16 = 1 << 6
    static let flagUTF8: UInt16 = 1 << 11

    /// 1980-01-01 00:00:00, the earliest DOS time: every entry gets it, so builds are reproducible.
    static let dosTime: UInt16 = 0
    static let dosDate: UInt16 = (0 << 9) | (1 << 5) | 1

    /// "Made by" Unix (3), spec 4.5, so external attributes carry a Unix mode.
    static let versionMadeBy: UInt16 = (3 << 8) | 45
    static let versionNeededDefault: UInt16 = 20
    static let versionNeededZip64: UInt16 = 45
    /// A regular file, rw-r--r--, in the high 16 bits of the external attributes.
    static let regularFileAttributes: UInt32 = UInt32(0o100644) << 16
}

/// Appends little-endian integers to a byte array.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u16(_ value: UInt16) { bytes.append(UInt8(value & 0xFF)); bytes.append(UInt8(value >> 8)) }
    mutating func u32(_ value: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xFF)) } }
    mutating func u64(_ value: UInt64) { for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8((value >> UInt64(shift)) & 0xFF)) } }
    mutating func append(_ other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }
}

/// Reads little-endian integers from a byte slice.
struct ByteReader {
    let bytes: [UInt8]
    var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    mutating func u16() -> UInt16 {
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    mutating func u32() -> UInt32 {
        var value: UInt32 = 0
        for i in 0..<4 { value |= UInt32(bytes[offset + i]) << UInt32(8 * i) }
        offset += 4
        return value
    }

    mutating func u64() -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<8 { value |= UInt64(bytes[offset + i]) << UInt64(8 * i) }
        offset += 8
        return value
    }

    mutating func take(_ count: Int) -> ArraySlice<UInt8> {
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }
}

/// A parsed local file header (the fixed part plus name and extra field).
struct LocalHeader {
    var flags: UInt16
    var method: UInt16
    var crc32: UInt32
    var compressedSize: Int64
    var uncompressedSize: Int64
    var nameBytes: [UInt8]
    var extraLength: Int

    /// The header's total size: fixed part, name and extra field.
    var totalSize: Int { ZipFormat.localHeaderSize + nameBytes.count + extraLength }

    /// The lengths of name and extra field from a header's fixed 30 bytes, or `nil` if the
    /// signature is not a local header's.
    static func variableLengths(fixed: [UInt8]) -> (name: Int, extra: Int)? {
        var reader = ByteReader(fixed)
        guard reader.u32() == ZipFormat.localHeaderSignature else { return nil }
        reader.offset = 26
        return (Int(reader.u16()), Int(reader.u16()))
    }

    /// Parses a complete header (`bytes` holds exactly ``totalSize`` bytes).
    static func parse(_ bytes: [UInt8], entry: String) throws -> LocalHeader {
        var reader = ByteReader(bytes)
        guard reader.u32() == ZipFormat.localHeaderSignature else {
            throw FormatError(.malformedArchive, "Expected a local file header; the pack is not a valid archive.", field: entry)
        }
        _ = reader.u16()  // version needed
        let flags = reader.u16()
        let method = reader.u16()
        _ = reader.u16(); _ = reader.u16()  // time, date
        let crc = reader.u32()
        var compressed = Int64(reader.u32())
        var uncompressed = Int64(reader.u32())
        let nameLength = Int(reader.u16())
        let extraLength = Int(reader.u16())
        let name = Array(reader.take(nameLength))
        let extra = Array(reader.take(extraLength))
        var offset: Int64 = 0
        try Zip64Extra.resolve(extra, uncompressed: &uncompressed, compressed: &compressed, offset: &offset, entry: entry)
        return LocalHeader(
            flags: flags, method: method, crc32: crc, compressedSize: compressed,
            uncompressedSize: uncompressed, nameBytes: name, extraLength: extraLength)
    }
}

enum Zip64Extra {
    /// Replaces each field that holds the 32-bit marker `0xFFFF_FFFF` with its 64-bit value from
    /// the ZIP64 extra field, in the order APPNOTE 4.5.3 gives: uncompressed, compressed, offset.
    static func resolve(_ extra: [UInt8], uncompressed: inout Int64, compressed: inout Int64, offset: inout Int64, entry: String) throws {
        let marker: Int64 = 0xFFFF_FFFF
        guard uncompressed == marker || compressed == marker || offset == marker else { return }
        guard let data = find(in: extra) else {
            throw FormatError(.malformedArchive, "Entry '\(entry)' has a ZIP64 marker but no ZIP64 extra field.", field: entry)
        }
        var fields = ByteReader(data)
        func next() throws -> Int64 {
            guard fields.remaining >= 8 else {
                throw FormatError(.malformedArchive, "The ZIP64 extra field of '\(entry)' is too short.", field: entry)
            }
            let value = fields.u64()
            guard value <= UInt64(Int64.max) else {
                throw FormatError(.malformedArchive, "Entry '\(entry)' declares an impossible size.", field: entry)
            }
            return Int64(value)
        }
        if uncompressed == marker { uncompressed = try next() }
        if compressed == marker { compressed = try next() }
        if offset == marker { offset = try next() }
    }

    /// The data of the ZIP64 extended-information field in an extra area, if present.
    static func find(in extra: [UInt8]) -> [UInt8]? {
        var reader = ByteReader(extra)
        while reader.remaining >= 4 {
            let id = reader.u16()
            let size = Int(reader.u16())
            guard size <= reader.remaining else { return nil }
            let data = Array(reader.take(size))
            if id == ZipFormat.zip64ExtraID { return data }
        }
        return nil
    }
}
