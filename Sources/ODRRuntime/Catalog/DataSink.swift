#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// A ``TransferSink`` that keeps a small body in memory: `catalog.json` and version manifests.
final class DataSink: TransferSink {
    private let body = Locked(Data())
    /// Bodies beyond this size are refused while they arrive, so an endless response stops there.
    private let limit: Int
    /// The file's name, for the error.
    private let file: String
    /// The code of the error for a body over the limit: `invalid-catalog` for a size limit,
    /// `integrity` for a manifest longer than its pin.
    private let code: ResourceError.Code

    init(limit: Int = CatalogTrust.defaultMaximumManifestBytes, file: String = "The catalog file", code: ResourceError.Code = .invalidCatalog) {
        self.limit = limit
        self.file = file
        self.code = code
    }

    var data: Data { body.withLock { $0 } }

    func begin(_ head: TransferResponseHead) async throws {
        body.withLock { $0.removeSubrange(Int(min(head.offset, Int64($0.count)))...) }
    }

    func write(_ bytes: Data) async throws {
        try body.withLock { body throws(ResourceError) in
            guard body.count + bytes.count <= limit else {
                throw ResourceError(code, "\(file) is larger than its limit of \(limit) bytes (or than catalog.json pins); the download was cut off. Check what the server serves, or raise the limit (CatalogTrust.maximumCatalogBytes, maximumManifestBytes).")
            }
            body.append(bytes)
        }
    }
}
