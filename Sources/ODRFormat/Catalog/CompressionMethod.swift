/// How a pack entry's bytes are stored in the archive.
///
/// In JSON it is written as `"stored"` or `"deflate"`; in the ZIP headers as method 0 or 8.
public enum CompressionMethod: String, Codable, Sendable, Hashable, CaseIterable {
    /// The bytes are stored as they are (already-compressed media, tiny files).
    case stored
    /// The bytes are compressed with raw DEFLATE.
    case deflate

    /// The method number in ZIP headers.
    public var zipMethod: UInt16 {
        switch self {
        case .stored: 0
        case .deflate: 8
        }
    }

    /// The method for a ZIP method number, or `nil` for methods packs never use.
    public init?(zipMethod: UInt16) {
        switch zipMethod {
        case 0: self = .stored
        case 8: self = .deflate
        default: return nil
        }
    }
}
