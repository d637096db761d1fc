import Foundation
import ODRFormat

extension BuildReport {
    /// The report as text for a terminal or a CI log.
    public func rendered() -> String {
        var lines: [String] = []
        let verb = publishedNewVersion ? "published version \(version)" : "nothing changed; version \(version) is current"
        lines.append("catalog \(catalogID): \(verb); distribution '\(distribution)' -> \(version)")
        if !variantAxes.isEmpty {
            lines.append("variant axes: " + variantAxes.summary)
        }
        lines.append("files: \(files) (\(hashedFiles) hashed, \(ByteCount.format(hashedBytes)) read; the rest from the build cache)"
                     + (followedLinks > 0 ? "; \(followedLinks) symbolic link(s) followed" : ""))
        if let splitMetadata {
            lines.append("split metadata: \(splitMetadata.written) metadata file(s) written, \(splitMetadata.reused) unchanged and reused")
        }
        if let metadataForm, metadataForm.form == .whole {
            lines.append("whole manifest: " + {
                switch metadataForm.reason {
                case .option: "--whole-manifest, for runtimes that cannot read split metadata"
                case .rules: "\"splitMetadata\": false in the rules"
                case .catalog, .default:
                    "kept from version \(metadataForm.keptFrom ?? version); --split-metadata switches this catalog to split metadata"
                }
            }())
        }
        if let chunking {
            lines.append("chunked files: \(chunking.files) (\(ByteCount.format(chunking.bytes)) in \(chunking.chunks) chunks)"
                         + (chunking.againstPrevious == false ? "" : "; \(chunking.changedChunks) chunk(s) changed since the previous version, \(ByteCount.format(chunking.bytesToMove)) to move"))
        }
        lines.append("")
        lines.append("packs (\(packs.count), \(writtenPacks) written, \(packs.count - writtenPacks) reused):")
        for pack in packs {
            let part = (pack.variant.isEmpty ? "" : " {\(pack.variant.variantDescription)}")
                + (pack.partCount > 1 ? " part \(pack.part)/\(pack.partCount)" : "")
            let flags = [pack.shared ? "shared" : nil, pack.reused ? "reused" : nil].compactMap { $0 }
            lines.append(
                "  [\(pack.tags.joined(separator: ", "))]\(part)  \(pack.entries) entries, \(pack.files) files, "
                    + "\(ByteCount.format(pack.archiveBytes)) download, \(ByteCount.format(pack.installedBytes)) installed"
                    + (flags.isEmpty ? "" : "  (\(flags.joined(separator: ", ")))"))
            lines.append("      \(pack.id)")
        }
        lines.append("")
        lines.append(
            "tags (\(tags.count)): bytes a client downloads to use each"
                + (variantAxes.isEmpty ? "" : " (every variant; below it, a device preferring each value)"))
        let width = tags.map(\.name.count).max() ?? 0
        let choiceWidth = tags.flatMap(\.variants).map { $0.axis.count + $0.value.count + 1 }.max() ?? 0
        for tag in tags {
            let name = tag.name.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append(
                "  \(name)  \(ByteCount.format(tag.downloadBytes)) in \(tag.packs.count) pack(s), "
                    + "\(ByteCount.format(tag.installedBytes)) installed, \(tag.files) files, priority \(tag.preservationPriority)"
                    + (tag.overFetchedBytes > 0 ? ", \(ByteCount.format(tag.overFetchedBytes)) of other tags' files (merged packs)" : ""))
            for choice in tag.variants {
                let label = "\(choice.axis)=\(choice.value)".padding(toLength: choiceWidth, withPad: " ", startingAt: 0)
                lines.append(
                    "    \(label)  \(ByteCount.format(choice.downloadBytes)) in \(choice.packs.count) pack(s), "
                        + "\(ByteCount.format(choice.installedBytes)) installed")
            }
        }
        lines.append("")
        lines.append("shared packs: \(sharedPacks.count)")
        lines.append("deduplication: \(duplicateFiles) duplicate file(s), \(ByteCount.format(bytesSavedByDeduplication)) saved")
        if !initialInstallAndPrefetchTags.isEmpty {
            lines.append(
                "initial install + prefetch [\(initialInstallAndPrefetchTags.joined(separator: ", "))]: "
                    + "\(ByteCount.format(initialInstallAndPrefetchBytes)) of \(ByteCount.format(initialInstallAndPrefetchBudget)) budget")
        }
        if !warnings.isEmpty {
            lines.append("")
            lines.append("warnings (\(warnings.count)):")
            for warning in warnings { lines.append("  \(warning)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
