import Foundation
import ODRFormat

/// Computes the SHA-256 of scanned files, on every core, asking the build cache first.
public struct AssetHasher: Sendable {
    /// How many files are hashed at once.
    public var concurrency: Int

    /// Creates a hasher that uses `concurrency` cores (all of them by default).
    public init(concurrency: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.concurrency = max(1, concurrency)
    }

    /// What hashing did.
    public struct Result: Sendable {
        /// The files with their digests, in the order they were given.
        public var assets: [HashedAsset]
        /// How many files were read and hashed (the rest came from the cache).
        public var hashedFiles: Int
        /// How many bytes were read and hashed.
        public var hashedBytes: Int64
    }

    /// Hashes `files`, taking digests from `cache` where the file is unchanged and recording new ones.
    ///
    /// - Parameter progress: called with the bytes hashed so far, from any thread.
    /// - Throws: `BuildError` `scan.unreadable` when a file cannot be read.
    public func hash(
        _ files: [AssetFile], cache: inout BuildCache?, progress: @Sendable (Int64) -> Void = { _ in }
    ) async throws(BuildError) -> Result {
        var digests = [String?](repeating: nil, count: files.count)
        var pending: [Int] = []
        for (index, file) in files.enumerated() {
            if let known = cache?.sha256(for: file) { digests[index] = known } else { pending.append(index) }
        }
        // Largest first, so the last file to finish is a small one and both cores stay busy.
        pending.sort { files[$0].size > files[$1].size || (files[$0].size == files[$1].size && $0 < $1) }
        let hashedBytes = pending.reduce(Int64(0)) { $0 + files[$1].size }
        do {
            try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var next = 0
                var done: Int64 = 0
                func submit() {
                    let index = pending[next]
                    let file = files[index]
                    next += 1
                    group.addTask {
                        do {
                            return (index, try ContentHash.sha256Hex(ofFileAt: file.url))
                        } catch {
                            throw BuildError(.assetsUnreadable, "cannot read the file to hash it", file: file.url.path, cause: error)
                        }
                    }
                }
                while next < pending.count && next < concurrency { submit() }
                while let (index, digest) = try await group.next() {
                    digests[index] = digest
                    done += files[index].size
                    progress(done)
                    if next < pending.count { submit() }
                }
            }
        } catch let error as BuildError {
            throw error
        } catch {
            throw BuildError(.assetsUnreadable, "hashing was interrupted", cause: error)
        }
        var assets: [HashedAsset] = []
        assets.reserveCapacity(files.count)
        for (index, file) in files.enumerated() {
            guard let digest = digests[index] else { continue }
            cache?.record(file, sha256: digest)
            assets.append(HashedAsset(file: file, sha256: digest))
        }
        return Result(assets: assets, hashedFiles: pending.count, hashedBytes: hashedBytes)
    }
}
