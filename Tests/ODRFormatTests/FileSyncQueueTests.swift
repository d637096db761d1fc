#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ODRFormat
import ODRTestSupport
import Testing

/// Completed files flushed to stable storage on another thread (issue 44): every file is whole and
/// read-only once the extractor's writes are finished, no descriptor is left open, and a flush that
/// fails is reported by `finishWrites()`, never lost.
struct FileSyncQueueTests {
    /// Descriptors this process holds.
    static func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }

    @Test(arguments: [false, true])
    func syncedExtractionLeavesWholeReadOnlyFilesAndNoDescriptor(writesThrough: Bool) throws {
        let out = try TemporaryDirectory()
        let before = try Self.openDescriptors()
        let extractor = try DirectoryExtractor(destination: out.url, syncFiles: true, writesThrough: writesThrough)
        var contents: [String: Data] = [:]
        // More files than the queue lets wait at once, so that the writer also waits for it.
        for index in 0..<(FileSyncQueue.maximumPending * 2 + 3) {
            let name = "f\(index / 10)/file-\(index).bin"
            let data = deterministicBytes(count: 1_000 + index * 517, seed: UInt64(index))
            let entry = PackEntryExpectation(name: name, method: .stored, storedSize: Int64(data.count), size: Int64(data.count), headerOffset: 0,
                                             sha256: ContentHash.sha256Hex(of: data))
            try extractor.beginEntry(entry)
            // In pieces, as they arrive from the network.
            for start in stride(from: 0, to: data.count, by: 700) {
                try data[start..<min(start + 700, data.count)].withUnsafeBytes { try extractor.writeEntryData($0) }
            }
            try extractor.endEntry(entry)
            contents[name] = data
        }
        try extractor.finishWrites()
        #expect(try Self.openDescriptors() == before)
        #expect(extractor.extracted.count == contents.count)
        for (name, data) in contents {
            let path = out.appending(name).path
            #expect(FileManager.default.contents(atPath: path) == data, "\(name)")
            let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(permissions == 0o444, "\(name)")
        }
    }

    @Test func aFailedFlushIsReportedByFinishAndNamesTheFile() throws {
        let queue = FileSyncQueue()
        // A descriptor that is not open: fsync fails with EBADF, as it would with EIO on a bad disk.
        queue.submit(-1, path: "/store/staging/abc.d/level1/map.json")
        let error = #expect(throws: FormatError.self) { try queue.finish() }
        #expect(error?.code == .io)
        #expect(error?.message.contains("level1/map.json") == true, "\(String(describing: error))")
        // The failure stays reported: files after it do not make the queue look clean again.
        #expect(throws: FormatError.self) { try queue.finish() }
    }
}
