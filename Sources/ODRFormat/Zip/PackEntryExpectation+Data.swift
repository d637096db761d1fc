extension PackEntryExpectation {
    /// Where the entry's data starts in the archive, as `odrpack` writes it: after the 30-byte
    /// local header, the name, and a 20-byte Zip64 extra field when the entry is 4 GiB or larger
    /// (`PackWriter`'s rule); `nil` when the sum overflows or the header offset is negative.
    ///
    /// A fetch of part of the entry's data (a chunk) starts here without reading the local header;
    /// the content hashes of what it takes then tell whether the archive agrees.
    public var predictedDataOffset: Int64? {
        let extra: Int64 = size >= 0xFFFF_FFFF ? 20 : 0
        let (end, overflow) = headerOffset.addingReportingOverflow(Int64(ZipFormat.localHeaderSize) + Int64(name.utf8.count) + extra)
        guard headerOffset >= 0, !overflow else { return nil }
        return end
    }
}
