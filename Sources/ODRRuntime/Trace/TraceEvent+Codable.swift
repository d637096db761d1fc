#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension TraceEvent: Codable {
    private enum Key: String, CodingKey {
        case event, t, request, tags, priority, packs, hint, likelihood
    }

    private enum Kind: String {
        case catalog, begin, end, hint
        case preservationPriority = "preservation-priority"
        case endHint = "hint-end"
    }

    /// Reads one event of the trace format; an unknown event or a value out of range is a ``TraceError``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let name = try container.decode(String.self, forKey: .event)
        guard let kind = Kind(rawValue: name) else {
            throw TraceError(
                .unknownEvent,
                "Unknown event '\(name)'; this version reads catalog, begin, end, preservation-priority, hint and hint-end. A newer runtime may have recorded the trace: replay it with an odrsim as new as that runtime.")
        }
        func time() throws -> Double {
            let t = try container.decode(Double.self, forKey: .t)
            guard t >= 0, t.isFinite else { throw TraceError(.invalidValue, "The time \(t) is not a non-negative number of seconds.") }
            return t
        }
        switch kind {
        case .catalog:
            self = .catalog(TraceCatalog(
                tags: try container.decode([TraceCatalog.Tag].self, forKey: .tags),
                packs: try container.decode([TraceCatalog.Pack].self, forKey: .packs)))
        case .begin:
            let priority: Priority
            if let word = try? container.decode(String.self, forKey: .priority) {
                guard word == "urgent" else {
                    throw TraceError(.invalidValue, "The priority '\(word)' is neither \"urgent\" nor a number in 0...1.")
                }
                priority = .urgent
            } else {
                let level = try container.decodeIfPresent(Double.self, forKey: .priority) ?? 0.5
                guard (0 ... 1).contains(level) else {
                    throw TraceError(.invalidValue, "The loading priority \(level) is outside 0...1.")
                }
                priority = .background(level)
            }
            self = .begin(
                time: try time(), request: try container.decode(Int.self, forKey: .request),
                tags: try container.decode([String].self, forKey: .tags), priority: priority)
        case .end:
            self = .end(time: try time(), request: try container.decode(Int.self, forKey: .request))
        case .preservationPriority:
            let value = try container.decode(Double.self, forKey: .priority)
            guard (0 ... 1).contains(value) else {
                throw TraceError(.invalidValue, "The preservation priority \(value) is outside 0...1.")
            }
            self = .preservationPriority(
                time: try time(), tags: try container.decode([String].self, forKey: .tags), priority: value)
        case .hint:
            // Read as a string too, so that "NaN" or "Infinity" get the range's message rather than a type error.
            let likelihood: Double
            if let number = try? container.decode(Double.self, forKey: .likelihood) {
                likelihood = number
            } else if let word = try? container.decode(String.self, forKey: .likelihood) {
                throw TraceError(.invalidValue, "The hint's likelihood \"\(word)\" is not a number in 0...1.")
            } else {
                likelihood = try container.decode(Double.self, forKey: .likelihood)
            }
            guard likelihood.isFinite, (0 ... 1).contains(likelihood) else {
                throw TraceError(.invalidValue, "The hint's likelihood \(likelihood) is outside 0...1.")
            }
            self = .hint(
                time: try time(), hint: try container.decode(Int.self, forKey: .hint),
                tags: try container.decode([String].self, forKey: .tags), likelihood: likelihood)
        case .endHint:
            self = .endHint(time: try time(), hint: try container.decode(Int.self, forKey: .hint))
        }
    }

    /// Writes the event in the trace format: its `event` name, `t`, and the event's own keys.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .catalog(let catalog):
            try container.encode(Kind.catalog.rawValue, forKey: .event)
            try container.encode(catalog.tags, forKey: .tags)
            try container.encode(catalog.packs, forKey: .packs)
        case .begin(let time, let request, let tags, let priority):
            try container.encode(Kind.begin.rawValue, forKey: .event)
            try container.encode(time, forKey: .t)
            try container.encode(request, forKey: .request)
            try container.encode(tags, forKey: .tags)
            switch priority {
            case .urgent: try container.encode("urgent", forKey: .priority)
            case .background(let level): try container.encode(level, forKey: .priority)
            }
        case .end(let time, let request):
            try container.encode(Kind.end.rawValue, forKey: .event)
            try container.encode(time, forKey: .t)
            try container.encode(request, forKey: .request)
        case .preservationPriority(let time, let tags, let priority):
            try container.encode(Kind.preservationPriority.rawValue, forKey: .event)
            try container.encode(time, forKey: .t)
            try container.encode(tags, forKey: .tags)
            try container.encode(priority, forKey: .priority)
        case .hint(let time, let hint, let tags, let likelihood):
            try container.encode(Kind.hint.rawValue, forKey: .event)
            try container.encode(time, forKey: .t)
            try container.encode(hint, forKey: .hint)
            try container.encode(tags, forKey: .tags)
            try container.encode(likelihood, forKey: .likelihood)
        case .endHint(let time, let hint):
            try container.encode(Kind.endHint.rawValue, forKey: .event)
            try container.encode(time, forKey: .t)
            try container.encode(hint, forKey: .hint)
        }
    }
}
