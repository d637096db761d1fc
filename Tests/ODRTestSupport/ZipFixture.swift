import Foundation
import ODRFormat

/// Builds raw ZIP archives byte by byte, including ones no honest writer would make: unsafe names,
/// symlink or device modes, duplicate names, flags we refuse. Entries are stored (not compressed).
///
/// ```swift
/// var zip = ZipFixture()
/// zip.add("../evil.txt", Data("x".utf8))
/// let (bytes, expectations) = zip.build()
/// ```
public struct ZipFixture {
    public struct Entry {
        public var name: String
        public var data: Data
        /// Unix mode written in the central directory's external attributes.
        public var mode: UInt32
        public var flags: UInt16
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    /// Adds a stored entry; `mode` defaults to a regular file.
    public mutating func add(_ name: String, _ data: Data, mode: UInt32 = 0o100644, flags: UInt16 = 0x0800) {
        entries.append(Entry(name: name, data: data, mode: mode, flags: flags))
    }

    /// The archive's bytes and, for each entry, what an honest manifest would say about it.
    public func build() -> (Data, [PackEntryExpectation]) {
        var out = Data()
        var central = Data()
        var expectations: [PackEntryExpectation] = []
        for entry in entries {
            let offset = out.count
            let name = Data(entry.name.utf8)
            let crc = crc32(entry.data)
            out.le32(0x0403_4B50); out.le16(20); out.le16(entry.flags); out.le16(0)
            out.le16(0); out.le16(0x21); out.le32(crc)
            out.le32(UInt32(entry.data.count)); out.le32(UInt32(entry.data.count))
            out.le16(UInt16(name.count)); out.le16(0)
            out.append(name)
            out.append(entry.data)
            central.le32(0x0201_4B50); central.le16(0x031E); central.le16(20); central.le16(entry.flags)
            central.le16(0); central.le16(0); central.le16(0x21); central.le32(crc)
            central.le32(UInt32(entry.data.count)); central.le32(UInt32(entry.data.count))
            central.le16(UInt16(name.count)); central.le16(0); central.le16(0); central.le16(0); central.le16(0)
            central.le32(entry.mode << 16); central.le32(UInt32(offset))
            central.append(name)
            expectations.append(PackEntryExpectation(
                name: entry.name, method: .stored, storedSize: Int64(entry.data.count), size: Int64(entry.data.count),
                headerOffset: Int64(offset), sha256: ContentHash.sha256Hex(of: entry.data)))
        }
        let directoryOffset = out.count
        out.append(central)
        out.le32(0x0605_4B50); out.le16(0); out.le16(0)
        out.le16(UInt16(entries.count)); out.le16(UInt16(entries.count))
        out.le32(UInt32(central.count)); out.le32(UInt32(directoryOffset)); out.le16(0)
        return (out, expectations)
    }

    private func crc32(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }
}

extension Data {
    mutating func le16(_ value: UInt16) { append(UInt8(value & 0xFF)); append(UInt8(value >> 8)) }
    mutating func le32(_ value: UInt32) { for i in 0..<4 { append(UInt8((value >> (8 * UInt32(i))) & 0xFF)) } }
}
