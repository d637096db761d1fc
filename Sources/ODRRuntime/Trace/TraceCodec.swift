#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads and writes request traces as JSON Lines: one ``TraceEvent`` object per line, keys sorted.
///
/// ```swift
/// var codec = TraceCodec()
/// let data = try codec.encode([.begin(time: 0, request: 1, tags: ["level1"], priority: .urgent),
///                              .end(time: 600, request: 1)])
/// let events = try codec.decode(data)     // the same events
/// ```
public struct TraceCodec: Sendable {
    /// Creates a codec.
    public init() {}

    /// One event as a line of JSON, without the newline.
    public func line(for event: TraceEvent) throws(TraceError) -> String {
        String(decoding: try Self.json(event, encoder: Self.makeEncoder()), as: UTF8.self)
    }

    /// The events as JSON Lines, each line ending with a newline.
    public func encode(_ events: some Sequence<TraceEvent>) throws(TraceError) -> Data {
        let encoder = Self.makeEncoder()
        var data = Data()
        for event in events {
            data.append(try Self.json(event, encoder: encoder))
            data.append(UInt8(ascii: "\n"))
        }
        return data
    }

    private static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    private static func json(_ event: TraceEvent, encoder: JSONEncoder) throws(TraceError) -> Data {
        do {
            return try encoder.encode(event)
        } catch {
            throw TraceError(.invalidValue, "The event cannot be written as JSON (a time, priority or likelihood is not finite).", cause: error)
        }
    }

    /// Every event of a JSON Lines trace; blank lines are skipped.
    ///
    /// - Throws: ``TraceError`` with the 1-based ``TraceError/line`` of the first bad line.
    public func decode(_ data: Data) throws(TraceError) -> [TraceEvent] {
        var events: [TraceEvent] = []
        let decoder = JSONDecoder()
        for (number, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\t") }) else {
                continue
            }
            do {
                events.append(try decoder.decode(TraceEvent.self, from: Data(line)))
            } catch var error as TraceError {
                error.line = number + 1
                throw error
            } catch {
                throw TraceError(
                    .malformedLine, "The line is not a trace event; each line must be one JSON object of the documented format.",
                    line: number + 1, cause: error)
            }
        }
        return events
    }
}
