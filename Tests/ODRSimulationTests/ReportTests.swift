import Foundation
@testable import ODRSimulation
import ODRRuntime
import Testing

struct ReportTests {
    static func report() -> SimulationReport {
        let (script, device) = SimulationFixtures.generated(.levels, seed: 2, days: 5, tags: 30)
        return SimulationReport(
            scenario: .init(workload: "levels", catalog: script.catalog, days: 5, seed: 2, device: device),
            simulator: Simulator(script: script, device: device), policies: PolicyChoice.allCases)
    }

    @Test func theTableHasARowPerPolicyAndTheIssuesColumns() {
        let report = Self.report()
        let lines = report.table().split(separator: "\n")
        #expect(lines.count == 2 + PolicyChoice.allCases.count)
        for column in ["requests", "hits", "misses", "downloaded", "vs belady", "stall", "purges", "over-purged", "peak disk", "in-use refusals"] {
            #expect(lines[0].contains(column), "\(column)")
        }
        #expect(lines.last?.hasPrefix("belady") == true)
        #expect(lines.last?.contains(" 1.00 ") == true)
    }

    @Test func csvHasPlainNumbers() throws {
        let report = Self.report()
        let rows = report.csv().split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        #expect(rows.count == 1 + PolicyChoice.allCases.count)
        let header = rows[0].map(String.init)
        let downloaded = try #require(header.firstIndex(of: "downloaded"))
        for (row, result) in zip(rows.dropFirst(), report.results) {
            #expect(row.count == header.count)
            #expect(Int64(row[downloaded]) == result.metrics.bytesDownloaded)
        }
    }

    @Test func jsonDecodesBackToTheResults() throws {
        let report = Self.report()
        let decoded = try JSONDecoder().decode(SimulationReport.self, from: report.json())
        #expect(decoded.results.map(\.metrics) == report.results.map(\.metrics))
        #expect(decoded.scenario == report.scenario)
    }

    @Test func theChartHasTwoPanelsOfLinesAndALegend() {
        let report = Self.report()
        let svg = SVGChart(report: report).render()
        #expect(svg.hasPrefix("<?xml"))
        #expect(svg.hasSuffix("</svg>\n"))
        #expect(svg.components(separatedBy: "<polyline").count - 1 == 2 * report.results.count)
        for title in ["Disk used by packs", "Cumulative bytes downloaded", "time (days)"] { #expect(svg.contains(title)) }
        for policy in PolicyChoice.allCases { #expect(svg.contains(">\(policy.rawValue)</text>")) }
        #expect(!svg.contains("nan") && !svg.contains("inf"))
    }

    @Test func distributionsParse() {
        #expect(SizeDistribution(parsing: "fixed:64MB") == .fixed(64_000_000))
        #expect(SizeDistribution(parsing: "uniform:1MiB:2MiB") == .uniform(1 << 20, 2 << 20))
        #expect(SizeDistribution(parsing: "lognormal:32MiB:0.8") == .logNormal(median: 32 << 20, sigma: 0.8))
        #expect(SizeDistribution(parsing: "uniform:2MB:1MB") == nil)
        #expect(SizeDistribution(parsing: "poisson:3") == nil)
    }
}
