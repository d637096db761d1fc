/// How far a build has come, for a progress bar.
public struct BuildProgress: Sendable, Equatable {
    /// The stage a build is in.
    public enum Phase: String, Sendable, CaseIterable {
        /// Listing the assets folder.
        case scanning
        /// Hashing files the cache does not know.
        case hashing
        /// Compressing and writing packs.
        case writing
        /// Writing the manifest and catalog index.
        case publishing
    }

    /// The current stage.
    public var phase: Phase
    /// Bytes done in this stage.
    public var completedBytes: Int64
    /// Bytes this stage handles in all.
    public var totalBytes: Int64

    /// Creates a progress value.
    public init(phase: Phase, completedBytes: Int64, totalBytes: Int64) {
        self.phase = phase
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }

    /// Completion of this stage, 0...1.
    public var fraction: Double {
        totalBytes > 0 ? min(1, Double(completedBytes) / Double(totalBytes)) : 1
    }
}
