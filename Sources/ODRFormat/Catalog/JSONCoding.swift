#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one JSON configuration for every file of a catalog, so that equal values always encode to
/// identical bytes (sorted keys, fixed indentation, a trailing newline).
enum CatalogJSON {
    static func encode(_ value: some Encodable) throws(FormatError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            var data = try encoder.encode(value)
            data.append(0x0A)
            return data
        } catch {
            throw FormatError(.invalidValue, "The value cannot be written as JSON.", cause: error)
        }
    }

    /// Decodes `type`, turning every decoding failure into a ``FormatError`` that names the field.
    ///
    /// The one entry point for JSON read from outside (`catalog.json`, manifests): it first refuses
    /// a duplicate key (``JSONKeyCheck``), on which readers would disagree.
    ///
    /// - Parameter keysChecked: `true` when the caller ran ``JSONKeyCheck`` over `data` already.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, file: String, keysChecked: Bool = false) throws(FormatError) -> T {
        if !keysChecked { try JSONKeyCheck.check(data, file: file) }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as FormatError {
            throw error
        } catch let error as DecodingError {
            let (path, detail) = describe(error)
            throw FormatError(
                .malformedJSON,
                "\(file) is not valid: \(detail). Rebuild the catalog with odrpack, or fix the file by hand.",
                field: path.isEmpty ? nil : path,
                cause: error
            )
        } catch {
            throw FormatError(.malformedJSON, "\(file) could not be read as JSON.", cause: error)
        }
    }

    private static func describe(_ error: DecodingError) -> (String, String) {
        switch error {
        case .keyNotFound(let key, let context):
            return (fieldPath(context.codingPath + [key]), "the required key '\(key.stringValue)' is missing")
        case .typeMismatch(let type, let context):
            return (fieldPath(context.codingPath), "expected a value of type \(type)")
        case .valueNotFound(let type, let context):
            return (fieldPath(context.codingPath), "expected a value of type \(type), found null")
        case .dataCorrupted(let context):
            return (fieldPath(context.codingPath), context.debugDescription)
        @unknown default:
            return ("", "\(error)")
        }
    }

    /// A coding path as `packs[2].id`.
    static func fieldPath(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }
}
