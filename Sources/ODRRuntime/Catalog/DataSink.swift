import Foundation
import ODRFormat

/// A ``TransferSink`` that keeps a small body in memory: `catalog.json` and version manifests.
final class DataSink: TransferSink {
    private let body = Locked(Data())
    /// Bodies beyond this size are refused (a manifest of a huge game is a few MiB).
    private let limit: Int

    init(limit: Int = 256 << 20) { self.limit = limit }

    var data: Data { body.withLock { $0 } }

    func begin(_ head: TransferResponseHead) async throws {
        body.withLock { $0.removeSubrange(Int(min(head.offset, Int64($0.count)))...) }
    }

    func write(_ bytes: Data) async throws {
        try body.withLock { body throws(ResourceError) in
            guard body.count + bytes.count <= limit else {
                throw ResourceError(.invalidCatalog, "The catalog file is larger than \(limit >> 20) MiB; refusing it.")
            }
            body.append(bytes)
        }
    }
}
