import Foundation
import ODRFormat

/// A first rules file for an assets folder, as `odrpack init` writes it: one tag per top-level
/// folder, the files at the top level untagged (`base`, installed with the app), and the usual
/// editor and OS leftovers excluded. It is a start to edit, not a plan: docs/ODRPACK.md, "Starting
/// from `odrpack init`", says what to change first.
public struct StarterRules: Sendable {
    /// A tag the starter rules define: its name and the top-level folder it includes.
    public struct Tag: Sendable, Equatable {
        public var name: String
        public var folder: String
        /// Bytes of regular files below the folder, for the summary `odrpack init` prints.
        public var bytes: Int64
    }

    /// The catalog id: the folder's name, made a valid id.
    public var catalogID: String
    /// One tag per top-level folder, in name order.
    public var tags: [Tag]
    /// Top-level folders that were skipped, with why (hidden, or no file below them).
    public var skipped: [String]

    /// Looks at `assets`' top level.
    ///
    /// - Throws: `scan.unreadable` when the folder cannot be listed.
    public init(assets: URL) throws(BuildError) {
        let manager = FileManager.default
        let names: [String]
        do {
            names = try manager.contentsOfDirectory(atPath: assets.path).sorted()
        } catch {
            throw BuildError(.assetsUnreadable, "cannot list the assets folder; pass the folder that holds the game's assets",
                             file: assets.path, cause: error)
        }
        catalogID = Self.tagName(from: assets.standardizedFileURL.lastPathComponent) ?? "game"
        var tags: [Tag] = []
        var skipped: [String] = []
        var used = Set<String>()
        for name in names {
            let url = assets.appending(path: name, directoryHint: .isDirectory)
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            if name.hasPrefix(".") { skipped.append("\(name) (hidden)"); continue }
            guard var tag = Self.tagName(from: name) else { skipped.append("\(name) (no valid tag name)"); continue }
            let base = tag
            var suffix = 2
            while !used.insert(tag).inserted || tag == "base" { tag = "\(base)-\(suffix)"; suffix += 1 }
            let bytes = Self.bytes(below: url)
            guard bytes > 0 else { skipped.append("\(name) (no file below it)"); used.remove(tag); continue }
            tags.append(Tag(name: tag, folder: name, bytes: bytes))
        }
        self.tags = tags
        self.skipped = skipped
    }

    /// The rules file's JSON text, in the layout of the sample's `odr.json`.
    public var json: String {
        var lines = [
            "{",
            "  \"comment\": \"Starter rules from odrpack init: one tag per top-level folder. Edit them: docs/ODRPACK.md, 'Starting from odrpack init'.\",",
            "  \"catalogID\": \(Self.quoted(catalogID)),",
            "  \"tags\": {",
        ]
        for (index, tag) in tags.enumerated() {
            let comma = index == tags.count - 1 ? "" : ","
            lines.append("    \(Self.quoted(tag.name)): { \"include\": [\(Self.quoted(tag.folder))], \"preservationPriority\": 0.5 }\(comma)")
        }
        lines += [
            "  },",
            "  \"exclude\": [\"**/.DS_Store\", \"**/Thumbs.db\", \"**/*.psd\", \"**/*.blend1\", \"**/*~\"],",
            "  \"initialInstall\": [],",
            "  \"limits\": { \"packSize\": \"64 MiB\" },",
            "  \"untagged\": \"base\"",
            "}",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// `name` as a tag or catalog id: letters, digits, `.`, `_` and `-` kept, other characters as
    /// `-`, lowercased, at most 128 characters; `nil` when nothing is left.
    static func tagName(from name: String) -> String? {
        var result = ""
        for scalar in name.unicodeScalars {
            let keep = scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
            result.unicodeScalars.append(keep ? scalar : "-")
        }
        result = result.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "-."))
        result = String(result.prefix(128))
        guard !result.isEmpty, TagRules.isValidTagName(result) else { return nil }
        return result
    }

    private static func bytes(below folder: URL) -> Int64 {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey]) else { return 0 }
        var total: Int64 = 0
        for case let url as URL in enumerator {
            guard let values = try? url.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey]), values.isRegularFile == true else { continue }
            total = total.clampedAdding(Int64(values.fileSize ?? 0))
        }
        return total
    }

    private static func quoted(_ text: String) -> String {
        let data = (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
