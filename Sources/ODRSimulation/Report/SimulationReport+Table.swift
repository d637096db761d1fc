import Foundation

extension SimulationReport {
    /// The columns of the table and CSV: a header and how to render each result.
    private var columns: [(header: String, text: (SimulationResult) -> String, number: (SimulationResult) -> String)] {
        func bytes(_ value: @escaping (SimulationMetrics) -> Int64) -> (SimulationResult) -> String {
            { ByteCount.format(value($0.metrics)) }
        }
        func raw(_ value: @escaping (SimulationMetrics) -> Int64) -> (SimulationResult) -> String {
            { String(value($0.metrics)) }
        }
        let ratio: (SimulationResult) -> String = { $0.downloadRatioToBelady.map { String(format2: $0) } ?? "-" }
        return [
            ("policy", { $0.policy }, { $0.policy }),
            ("requests", raw { Int64($0.requests) }, raw { Int64($0.requests) }),
            ("hits", raw { Int64($0.hits) }, raw { Int64($0.hits) }),
            ("misses", raw { Int64($0.misses) }, raw { Int64($0.misses) }),
            ("downloaded", bytes(\.bytesDownloaded), raw(\.bytesDownloaded)),
            ("vs belady", ratio, ratio),
            ("prefetched", bytes(\.prefetchedBytes), raw(\.prefetchedBytes)),
            ("unused", bytes(\.unusedPrefetchBytes), raw(\.unusedPrefetchBytes)),
            ("stall", { Self.duration($0.metrics.stallSeconds) }, { String(format1: $0.metrics.stallSeconds) }),
            ("purges", raw { Int64($0.purgedPacks) }, raw { Int64($0.purgedPacks) }),
            ("over-purged", bytes(\.overPurgedBytes), raw(\.overPurgedBytes)),
            ("peak disk", bytes(\.peakDiskBytes), raw(\.peakDiskBytes)),
            ("in-use refusals", raw { Int64($0.inUseLimitRefusals) }, raw { Int64($0.inUseLimitRefusals) }),
            ("out of space", raw { Int64($0.outOfSpaceFailures) }, raw { Int64($0.outOfSpaceFailures) }),
        ]
    }

    /// A plain-text table, one row per policy, columns aligned.
    public func table() -> String {
        let columns = self.columns
        let rows = [columns.map(\.header)] + results.map { result in columns.map { $0.text(result) } }
        let widths = columns.indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { c, cell in
                let pad = String(repeating: " ", count: widths[c] - cell.count)
                return c == 0 ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }
        var text = line(rows[0]) + "\n"
        text += line(widths.map { String(repeating: "-", count: $0) }) + "\n"
        for row in rows.dropFirst() { text += line(row) + "\n" }
        return text
    }

    /// The table as CSV: a header line, then one line per policy, bytes and seconds as plain numbers.
    public func csv() -> String {
        let columns = self.columns
        var text = columns.map { $0.header.replacingOccurrences(of: " ", with: "_") }.joined(separator: ",") + "\n"
        for result in results {
            text += columns.map { $0.number(result) }.joined(separator: ",") + "\n"
        }
        return text
    }

    /// A summary of the scenario for the line above the table.
    public func scenarioSummary() -> String {
        let s = scenario
        var text = "\(s.workload) on \(s.catalog): \(s.tags) tags, \(s.packs) packs, \(ByteCount.format(s.catalogBytes))"
        text += "; \(String(format1: s.days)) days, seed \(s.seed)"
        text += "; disk \(ByteCount.format(s.device.diskCapacity)), other apps ~\(ByteCount.format(s.device.otherAppsBytes))"
        if let budget = s.device.cacheBudget { text += ", budget \(ByteCount.format(budget))" }
        text += ", in-use limit \(ByteCount.format(s.device.inUseLimit))"
        return text
    }

    static func duration(_ seconds: Double) -> String {
        if seconds >= 3600 { return String(format1: seconds / 3600) + " h" }
        if seconds >= 60 { return String(format1: seconds / 60) + " min" }
        return String(format1: seconds) + " s"
    }
}
