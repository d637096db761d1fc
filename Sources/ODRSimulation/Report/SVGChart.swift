import Foundation

/// Draws a report's timelines as an SVG: disk used by the store and cumulative bytes downloaded over
/// time, one line per policy, with axes, tick labels and a legend. Plain SVG 1.1, readable in any
/// browser.
public struct SVGChart: Sendable {
    public var report: SimulationReport
    public var width = 960.0
    public var panelHeight = 300.0

    public init(report: SimulationReport) { self.report = report }

    private static let colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    private let margin = (left: 80.0, right: 170.0, top: 50.0, bottom: 50.0)

    /// The SVG document.
    public func render() -> String {
        let height = margin.top + 2 * panelHeight + 2 * margin.bottom
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(fmt(width / 2))" y="24" text-anchor="middle" font-size="16" font-weight="bold">\(escape("odrsim: \(report.scenario.workload), \(report.scenario.catalog), seed \(report.scenario.seed)"))</text>

            """
        svg += panel(title: "Disk used by packs", top: margin.top, value: { Double($0.diskBytes) })
        svg += panel(title: "Cumulative bytes downloaded", top: margin.top + panelHeight + margin.bottom, value: { Double($0.downloadedBytes) })
        svg += legend()
        svg += "</svg>\n"
        return svg
    }

    private func panel(title: String, top: Double, value: (SimulationResult.Sample) -> Double) -> String {
        let left = margin.left, plotWidth = width - margin.left - margin.right
        let plotHeight = panelHeight - 30
        let bottom = top + plotHeight
        let duration = max(report.results.flatMap(\.samples).map(\.time).max() ?? 1, 1)
        let maxValue = max(report.results.flatMap(\.samples).map(value).max() ?? 1, 1)
        let (unitName, unit) = Self.byteUnit(for: maxValue)
        let yTicks = Self.ticks(upTo: maxValue / unit)
        let yTop = (yTicks.last ?? 1) * unit
        let days = duration >= 2 * 86_400
        let timeUnit = days ? 86_400.0 : 3600.0
        let xTicks = Self.ticks(upTo: duration / timeUnit)
        let xRight = max((xTicks.last ?? 1) * timeUnit, duration)
        func x(_ t: Double) -> Double { left + t / xRight * plotWidth }
        func y(_ v: Double) -> Double { bottom - v / yTop * plotHeight }

        var svg = "<g>\n<text x=\"\(fmt(left))\" y=\"\(fmt(top - 8))\" font-size=\"14\" font-weight=\"bold\">\(escape(title))</text>\n"
        for tick in yTicks {
            let ty = y(tick * unit)
            svg += "<line x1=\"\(fmt(left))\" y1=\"\(fmt(ty))\" x2=\"\(fmt(left + plotWidth))\" y2=\"\(fmt(ty))\" stroke=\"#e0e0e0\"/>\n"
            svg += "<text x=\"\(fmt(left - 6))\" y=\"\(fmt(ty + 4))\" text-anchor=\"end\">\(Self.label(tick))</text>\n"
        }
        for tick in xTicks {
            let tx = x(tick * timeUnit)
            svg += "<line x1=\"\(fmt(tx))\" y1=\"\(fmt(bottom))\" x2=\"\(fmt(tx))\" y2=\"\(fmt(bottom + 5))\" stroke=\"black\"/>\n"
            svg += "<text x=\"\(fmt(tx))\" y=\"\(fmt(bottom + 18))\" text-anchor=\"middle\">\(Self.label(tick))</text>\n"
        }
        svg += "<line x1=\"\(fmt(left))\" y1=\"\(fmt(top))\" x2=\"\(fmt(left))\" y2=\"\(fmt(bottom))\" stroke=\"black\"/>\n"
        svg += "<line x1=\"\(fmt(left))\" y1=\"\(fmt(bottom))\" x2=\"\(fmt(left + plotWidth))\" y2=\"\(fmt(bottom))\" stroke=\"black\"/>\n"
        svg += "<text x=\"\(fmt(left + plotWidth / 2))\" y=\"\(fmt(bottom + 36))\" text-anchor=\"middle\">time (\(days ? "days" : "hours"))</text>\n"
        svg += "<text transform=\"translate(\(fmt(left - 55)),\(fmt(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">\(unitName)</text>\n"
        for (i, result) in report.results.enumerated() {
            let points = result.samples.map { "\(fmt(x($0.time))),\(fmt(y(value($0))))" }.joined(separator: " ")
            let dash = result.policy == PolicyChoice.belady.rawValue ? " stroke-dasharray=\"6,4\"" : ""
            svg += "<polyline fill=\"none\" stroke=\"\(Self.colors[i % Self.colors.count])\" stroke-width=\"1.6\"\(dash) points=\"\(points)\"/>\n"
        }
        return svg + "</g>\n"
    }

    private func legend() -> String {
        let x = width - margin.right + 20
        var svg = "<g>\n<text x=\"\(fmt(x))\" y=\"\(fmt(margin.top))\" font-weight=\"bold\">policy</text>\n"
        for (i, result) in report.results.enumerated() {
            let y = margin.top + 20 + Double(i) * 20
            let dash = result.policy == PolicyChoice.belady.rawValue ? " stroke-dasharray=\"6,4\"" : ""
            svg += "<line x1=\"\(fmt(x))\" y1=\"\(fmt(y - 4))\" x2=\"\(fmt(x + 24))\" y2=\"\(fmt(y - 4))\" stroke=\"\(Self.colors[i % Self.colors.count])\" stroke-width=\"2.5\"\(dash)/>\n"
            svg += "<text x=\"\(fmt(x + 30))\" y=\"\(fmt(y))\">\(escape(result.policy))</text>\n"
        }
        return svg + "</g>\n"
    }

    /// Up to about six round tick values from 0 to at least `maximum`.
    static func ticks(upTo maximum: Double) -> [Double] {
        guard maximum > 0 else { return [0, 1] }
        let rough = maximum / 5
        let magnitude = pow(10, floor(log10(rough)))
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= rough } ?? 10 * magnitude
        let count = Int((maximum / step).rounded(.up))
        return (0 ... max(count, 1)).map { Double($0) * step }
    }

    private static func byteUnit(for maximum: Double) -> (String, Double) {
        if maximum >= 0x1p30 { return ("GiB", 0x1p30) }
        if maximum >= 0x1p20 { return ("MiB", 0x1p20) }
        return ("KiB", 0x1p10)
    }

    private static func label(_ value: Double) -> String {
        value == value.rounded() ? String(Int64(value)) : String(format2: value).replacingOccurrences(of: #"0$"#, with: "", options: .regularExpression)
    }

    private func fmt(_ value: Double) -> String { String(format1: value) }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
