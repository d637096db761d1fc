import Foundation

import ODRFormat

/// A summary of a catalog and one of its versions, for `odrpack inspect`.
public struct CatalogInspection: Codable, Sendable, Equatable {
    /// The catalog's id.
    public var catalogID: String
    /// The index's serial.
    public var serial: Int
    /// Distribution name -> version.
    public var distributions: [String: Int]
    /// Every published version number.
    public var versions: [Int]
    /// The version shown in detail (assembled from its bins and tables when it is split).
    public var manifest: VersionManifest
    /// For a split version (format 3): how its metadata is spread over files.
    public var splitMetadata: SplitSummary?
    /// Whether `catalog.json` is signed, by which keys, and when it expires.
    public var signing: Signing

    /// The signing state of `catalog.json`.
    public struct Signing: Codable, Sendable, Equatable {
        /// The ids of the keys whose signatures it carries (empty: unsigned).
        public var keyIDs: [String]
        /// When clients stop accepting it (`YYYY-MM-DDTHH:MM:SSZ`), if it says.
        public var expires: String?
        /// Seconds from the inspection to `expires` (negative once expired); `nil` without one.
        public var secondsToExpiry: Int64?

        /// Expiry closer than this is warned about: a week to sign again before clients refuse it.
        public static let warningSeconds: Int64 = 7 * 24 * 3600

        /// The warning `odrpack inspect` prints, if any.
        public var warning: String? {
            guard let seconds = secondsToExpiry, seconds < Self.warningSeconds else { return nil }
            return seconds < 0
                ? "warning: catalog.json expired \(Self.days(-seconds)) ago; clients refuse it until it is signed again (odrpack sign)"
                : "warning: catalog.json expires in \(Self.days(seconds)), under 7 days; sign it again (odrpack sign) before clients refuse it"
        }

        static func days(_ seconds: Int64) -> String {
            seconds >= 86_400 ? "\(seconds / 86_400) day(s)" : "\(seconds / 3600) hour(s)"
        }
    }

    /// How a split version's metadata is spread over files.
    public struct SplitSummary: Codable, Sendable, Equatable {
        /// Bytes of `versions/<n>.json`.
        public var manifestBytes: Int64
        /// Tag bins, file tables, and the bytes of all of them as served.
        public var bins: Int, tables: Int, metadataBytes: Int64
    }

    /// Reads the index and the manifest of `version` (by default the `live` distribution's version,
    /// or the latest one when there is no `live`).
    /// - Parameter now: the time expiry is measured from.
    public init(catalog: CatalogDirectory, version: Int? = nil, now: Date = Date()) throws(BuildError) {
        let index = try catalog.loadIndex()
        let chosen = version ?? index.distributions["live"] ?? index.versions.map(\.number).max()
        guard let chosen else {
            throw BuildError(.unknownVersion, "the catalog has no versions yet; run odrpack build", file: catalog.root.path)
        }
        catalogID = index.id
        serial = index.serial
        distributions = index.distributions
        versions = index.versions.map(\.number)
        signing = Signing(
            keyIDs: (index.signatures ?? []).map(\.keyID), expires: index.expires,
            secondsToExpiry: index.expires.flatMap(CatalogExpiry.date(from:)).map { Int64($0.timeIntervalSince(now).rounded(.down)) })
        let loaded = try catalog.loadVersion(chosen, in: index)
        manifest = loaded.manifest
        if let parts = loaded.split {
            let files = parts.files
            splitMetadata = SplitSummary(
                manifestBytes: index.version(chosen)?.size ?? 0, bins: parts.bins.count, tables: files.count - parts.bins.count,
                metadataBytes: files.lazy.map(\.pin.size).clampedSum())
        }
    }

    /// The summary as text.
    public func rendered() -> String {
        var lines = ["catalog \(catalogID)  serial \(serial)"]
        let pointers = distributions.sorted { $0.key < $1.key }.map { "\($0.key) -> \($0.value)" }
        lines.append("distributions: " + (pointers.isEmpty ? "none" : pointers.joined(separator: ", ")))
        lines.append("versions: " + versions.map(String.init).joined(separator: ", "))
        let keys = signing.keyIDs.map { String($0.prefix(16)) }.joined(separator: ", ")
        lines.append(
            (signing.keyIDs.isEmpty ? "signing: unsigned" : "signing: signed by \(signing.keyIDs.count) key(s): \(keys)")
                + (signing.expires.map { "; expires \($0)" } ?? "; no expiry"))
        if let warning = signing.warning { lines.append(warning) }
        // Clamped: a manifest built by hand can declare sizes whose sum does not fit (validation
        // refuses it when decoding, but a CatalogInspection can be made from any manifest).
        let totalDownload = manifest.packs.lazy.map(\.archiveBytes).clampedSum()
        let totalInstalled = manifest.packs.lazy.map(\.installedBytes).clampedSum()
        lines.append("")
        lines.append(
            "version \(manifest.version): \(manifest.tags.count) tags, \(manifest.packs.count) packs, "
                + "\(manifest.files.count) files, \(ByteCount.format(totalDownload)) download, \(ByteCount.format(totalInstalled)) installed")
        if let split = splitMetadata {
            lines.append(
                "split metadata (format 3): manifest \(ByteCount.format(split.manifestBytes)), \(split.bins) tag bins and \(split.tables) file tables, "
                    + "\(ByteCount.format(split.metadataBytes)) in meta/")
        }
        if manifest.files.contains(where: { !$0.chunks.isEmpty }) {
            let chunks = ChunkSummary(of: manifest, against: nil)
            lines.append(
                "chunked files (format \(manifest.formatVersion)): \(chunks.files), \(ByteCount.format(chunks.bytes)) in \(chunks.chunks) chunks "
                    + "(\(ByteCount.format(chunks.bytes / Int64(max(1, chunks.chunks)))) on average)")
        }
        lines.append("initial install: " + (manifest.initialInstallTags.isEmpty ? "none" : manifest.initialInstallTags.joined(separator: ", ")))
        lines.append("prefetch order: " + (manifest.prefetchOrder.isEmpty ? "none" : manifest.prefetchOrder.joined(separator: ", ")))
        if !manifest.variantAxes.isEmpty {
            lines.append("variant axes: " + manifest.variantAxes.summary)
        }
        lines.append("")
        lines.append(manifest.variantAxes.isEmpty ? "tags:" : "tags (bytes over every variant):")
        let width = manifest.tags.map(\.name.count).max() ?? 0
        for tag in manifest.tags {
            lines.append(
                "  \(tag.name.padding(toLength: width, withPad: " ", startingAt: 0))  priority \(tag.preservationPriority)  "
                    + "\(tag.packs.count) pack(s)  \(ByteCount.format(tag.downloadBytes)) download  \(ByteCount.format(tag.installedBytes)) installed")
        }
        lines.append("")
        lines.append("packs:")
        for pack in manifest.packs {
            let variant = pack.variant.isEmpty ? "" : "  {\(pack.variant.variantDescription)}"
            lines.append(
                "  \(pack.id.prefix(16))  [\(pack.tags.joined(separator: ", "))]\(variant)  \(pack.entryCount) entries  "
                    + "\(ByteCount.format(pack.archiveBytes)) download  \(ByteCount.format(pack.installedBytes)) installed")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
