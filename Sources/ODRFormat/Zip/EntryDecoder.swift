/// Checks one entry's local header against the manifest, then decodes its data: inflates when
/// needed, refuses output beyond the declared size, and checks the SHA-256 at the end.
///
/// The streaming, range and random-access readers all use it, so an entry is judged the same way
/// however its bytes arrive.
struct EntryDecoder {
    let expected: PackEntryExpectation
    private(set) var remainingInput: Int64
    private var produced: Int64 = 0
    /// Bytes inflated beyond the declared size (not written anywhere): a little means the entry is
    /// damaged, a lot means a decompression bomb.
    private var excess: Int64 = 0
    private var sha = StreamingSHA256()
    private let inflater: ZlibStream?
    /// Hashes the inflated bytes on another thread while this one writes them (deflated entries).
    private var background: BackgroundSHA256?

    /// Checks the header and prepares to decode the data that follows it.
    ///
    /// - Parameters:
    ///   - inflater: a reusable inflate stream (reset here), for deflated entries.
    ///   - hasher: a reusable hasher on a thread of its own, for a deflated entry's inflated bytes
    ///     (``BackgroundSHA256``); `nil` hashes them on the caller's thread.
    init(header: LocalHeader, expected: PackEntryExpectation, inflater: () throws -> ZlibStream,
         hasher: (() -> BackgroundSHA256)? = nil) throws {
        let name = expected.name
        guard header.flags & (ZipFormat.flagEncrypted | ZipFormat.flagStrongEncryption) == 0 else {
            throw FormatError(.unsupportedFeature, "Entry '\(name)' is encrypted; packs are never encrypted.", field: name)
        }
        guard header.flags & ZipFormat.flagDataDescriptor == 0 else {
            throw FormatError(.unsupportedFeature, "Entry '\(name)' uses a data descriptor; packs must record sizes in the local header. Rebuild the pack with odrpack.", field: name)
        }
        guard let method = CompressionMethod(zipMethod: header.method) else {
            throw FormatError(.unsupportedFeature, "Entry '\(name)' uses compression method \(header.method); packs use only stored (0) or deflate (8).", field: name)
        }
        guard method == expected.method else {
            throw FormatError(.entryMismatch, "Entry '\(name)' is \(method.rawValue) but the manifest says \(expected.method.rawValue).", field: name)
        }
        guard header.compressedSize == expected.storedSize, header.uncompressedSize == expected.size else {
            throw FormatError(
                .entryMismatch,
                "Entry '\(name)' declares \(header.compressedSize) stored / \(header.uncompressedSize) uncompressed bytes; the manifest says \(expected.storedSize) / \(expected.size).",
                field: name)
        }
        if method == .stored, expected.storedSize != expected.size {
            throw FormatError(.entryMismatch, "Stored entry '\(name)' has different stored and uncompressed sizes.", field: name)
        }
        self.expected = expected
        remainingInput = expected.storedSize
        if method == .deflate {
            let stream = try inflater()
            stream.reset()
            self.inflater = stream
            if let hasher {
                let background = hasher()
                background.start(from: StreamingSHA256())
                self.background = background
            }
        } else {
            self.inflater = nil
        }
    }

    /// Prepares to continue a stored entry of which an earlier attempt already wrote `heldBytes`.
    ///
    /// - Parameter heldHash: the SHA-256 state after those bytes, hashed from what was written (not
    ///   from what was received), so that the final check covers the whole file.
    /// - Throws: `invalid-operation` for a deflated entry (inflate cannot restart mid-stream) or a
    ///   `heldBytes` outside `0...storedSize`.
    init(resuming expected: PackEntryExpectation, heldBytes: Int64, heldHash: StreamingSHA256) throws {
        let name = expected.name
        guard expected.method == .stored else {
            throw FormatError(.invalidOperation, "Entry '\(name)' is deflated and cannot be resumed; fetch it from its local header.", field: name)
        }
        guard expected.storedSize == expected.size else {
            throw FormatError(.entryMismatch, "Stored entry '\(name)' has different stored and uncompressed sizes.", field: name)
        }
        // Two comparisons, not a range: `0...storedSize` traps for a negative size.
        guard heldBytes >= 0, heldBytes <= expected.storedSize else {
            throw FormatError(.invalidOperation, "Cannot resume entry '\(name)' after \(heldBytes) bytes: it has \(expected.storedSize).", field: name)
        }
        self.expected = expected
        remainingInput = expected.storedSize - heldBytes
        produced = heldBytes
        sha = heldHash
        inflater = nil
    }

    /// Feeds up to ``remainingInput`` bytes of `input`; returns how many were used.
    mutating func feed(_ input: UnsafeRawBufferPointer, scratch: inout [UInt8], sink: any PackEntrySink) throws -> Int {
        let count = Int(min(Int64(input.count), remainingInput))
        guard count > 0 else { return 0 }
        let chunk = UnsafeRawBufferPointer(rebasing: input[..<count])
        if let inflater {
            guard !inflater.ended else {
                throw FormatError(.corruptData, "Entry '\(expected.name)' has bytes after the end of its compressed data.", field: expected.name)
            }
            let expected = self.expected
            var produced = self.produced
            var excess = self.excess
            var sha = self.sha
            let background = self.background
            let bombLimit = Self.bombLimit(forDeclared: expected.size)
            let used = try inflater.process(chunk, scratch: &scratch) { out in
                // produced <= expected.size always, so the subtraction cannot overflow where a sum could.
                guard excess == 0, Int64(out.count) <= expected.size - produced else {
                    // Past the declared size nothing more is written; keep counting to tell damage
                    // (a little more) from a bomb (far more), up to a bound.
                    excess = excess.clampedAdding(Int64(out.count) - (expected.size - produced))
                    produced = expected.size
                    guard excess <= bombLimit else {
                        throw FormatError(
                            .sizeMismatch,
                            "Entry '\(expected.name)' inflates to more than \(expected.size.clampedAdding(bombLimit)) bytes, far beyond the \(expected.size) its manifest declares: a decompression bomb. The pack was refused.",
                            field: expected.name)
                    }
                    return
                }
                produced += Int64(out.count)
                if let background { background.update(copying: out) } else { sha.update(out) }
                try sink.writeEntryData(out)
            }
            self.produced = produced
            self.excess = excess
            self.sha = sha
            if used < count {
                throw FormatError(.corruptData, "Entry '\(expected.name)' has bytes after the end of its compressed data.", field: expected.name)
            }
        } else {
            produced += Int64(count)
            sha.update(chunk)
            try sink.writeEntryData(chunk)
        }
        remainingInput -= Int64(count)
        return count
    }

    /// How far past its declared size an entry may inflate before it counts as a decompression bomb
    /// rather than damaged data: its declared size again, and at least 1 MiB.
    static func bombLimit(forDeclared size: Int64) -> Int64 { max(size, 1 << 20) }

    /// Checks the complete entry once all of its stored bytes were fed.
    func finish() throws {
        let name = expected.name
        guard excess == 0 else {
            throw FormatError(
                .sizeMismatch,
                "Entry '\(name)' inflates to \(expected.size.clampedAdding(excess)) bytes, not the \(expected.size) its manifest declares: it does not match its manifest (damaged in transit or at the source). Download it again.",
                field: name)
        }
        if let inflater, !inflater.ended {
            throw FormatError(.corruptData, "Entry '\(name)' ends before its compressed data does: it does not match its manifest (damaged or cut short). Download it again.", field: name)
        }
        guard produced == expected.size else {
            throw FormatError(
                .sizeMismatch,
                "Entry '\(name)' inflates to \(produced) bytes, not the \(expected.size) its manifest declares: it does not match its manifest (damaged in transit or at the source). Download it again.",
                field: name)
        }
        let digest = (background?.result() ?? sha).finalize()
        guard digest == expected.sha256 else {
            throw FormatError(.hashMismatch, "Entry '\(name)' has SHA-256 \(digest) but its manifest says \(expected.sha256): it does not match its manifest (damaged in transit or at the source). Download it again.", field: name)
        }
    }
}

extension LocalHeader {
    /// The header's entry name, checked to be a clean relative path.
    func checkedName() throws -> String {
        guard let name = String(validating: nameBytes, as: UTF8.self) else {
            throw FormatError(.unsafeEntryName, "An entry name is not valid UTF-8.", field: nil)
        }
        if let problem = RelativePath.problem(in: name) {
            throw FormatError(.unsafeEntryName, "The entry name '\(name)' is not allowed: \(problem).", field: name)
        }
        return name
    }
}

extension LocalHeader {
    /// Gathers one local header from bytes that arrive in pieces of any size: the 4-byte signature
    /// first (what another record means is the caller's business), then the fixed part, then the
    /// name and extra field that the fixed part announces.
    struct Collector {
        enum Progress {
            /// The header needs more bytes.
            case incomplete
            /// The record is not a local header; ``bytes`` holds its 4-byte signature.
            case otherRecord(signature: UInt32)
            /// ``bytes`` holds the whole header, ready for ``LocalHeader/parse(_:entry:)``.
            case complete
        }

        private enum Part { case signature, fixed, variable }

        /// The header's bytes gathered so far.
        private(set) var bytes: [UInt8] = []
        private var part = Part.signature
        private var needed = 4

        /// Takes from `input` only what the header still lacks; returns how many bytes it used.
        mutating func collect(_ input: UnsafeRawBufferPointer) -> (used: Int, progress: Progress) {
            var used = 0
            while true {
                let count = min(needed - bytes.count, input.count - used)
                bytes.append(contentsOf: input[used..<(used + count)])
                used += count
                guard bytes.count == needed else { return (used, .incomplete) }
                switch part {
                case .signature:
                    var reader = ByteReader(bytes)
                    let signature = reader.u32()
                    guard signature == ZipFormat.localHeaderSignature else { return (used, .otherRecord(signature: signature)) }
                    part = .fixed
                    needed = ZipFormat.localHeaderSize
                case .fixed:
                    var reader = ByteReader(bytes, offset: 26)
                    needed += Int(reader.u16()) + Int(reader.u16())
                    part = .variable
                case .variable:
                    return (used, .complete)
                }
            }
        }
    }
}
