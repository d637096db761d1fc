internal import CZlib

/// The CRC-32 that ZIP headers carry. Readers outside this project (unzip, Python) check it;
/// our readers check SHA-256 instead, since CRC-32 does not protect against tampering.
struct CRC32 {
    private(set) var value: UInt32 = 0

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        var offset = 0
        var crc = UInt(value)
        while offset < bytes.count {
            // zlib takes a 32-bit length; feed large buffers in slices.
            let length = min(bytes.count - offset, Int(Int32.max))
            crc = crc32(crc, base.advanced(by: offset).assumingMemoryBound(to: Bytef.self), uInt(length))
            offset += length
        }
        value = UInt32(truncatingIfNeeded: crc)
    }
}
