import ODRTestSupport
import Foundation
import ODRBuilder
import ODRFormat

/// A random assets tree and rules, fixed by a seed: folders, files whose contents repeat (to exercise
/// deduplication), and tag rules mixing folder, `**`, `*`, `?` and class patterns.
struct RandomAssetTree {
    var files: [(path: String, content: Data)]
    var rules: TagRules

    init(seed: UInt64, maxFiles: Int = 40, maxFileSize: Int = 3000) throws {
        var random = SeededGenerator(seed: seed)
        let folders = ["Levels/Level1", "Levels/Level2", "Levels/Level3", "Shared", "Shared/Forest", "UI", "Audio"]
        let extensions = ["json", "png", "ogg", "txt"]
        let contentPool = (0..<Int.random(in: 3...25, using: &random)).map { index -> Data in
            let size = Int.random(in: 1...maxFileSize, using: &random)
            var bytes = [UInt8](repeating: 0, count: size)
            for i in 0..<size { bytes[i] = UInt8(truncatingIfNeeded: (index &* 31) &+ i % 7 &+ Int(random.next() % 3)) }
            return Data(bytes)
        }
        var seen = Set<String>()
        files = []
        for _ in 0..<Int.random(in: 1...maxFiles, using: &random) {
            let folder = folders.randomElement(using: &random) ?? "UI"
            let ext = extensions.randomElement(using: &random) ?? "txt"
            let path = "\(folder)/f\(Int.random(in: 0..<30, using: &random)).\(ext)"
            guard seen.insert(path).inserted else { continue }
            files.append((path, contentPool.randomElement(using: &random) ?? Data("x".utf8)))
        }
        let patternPool = [
            "Levels/Level1", "Levels/Level2/**", "Levels/Level[23]/*.png", "Shared/**", "Shared/Forest",
            "**/*.ogg", "UI/*.json", "*/f1?.*", "Audio", "**/f[0-4].*", "Levels/**/*.json",
        ]
        var tags: [TagRules.TagRule] = []
        for index in 0..<Int.random(in: 1...6, using: &random) {
            let include = try (0..<Int.random(in: 1...3, using: &random)).map { _ in
                try GlobPattern(patternPool.randomElement(using: &random) ?? "UI")
            }
            let exclude = Bool.random(using: &random) ? [try GlobPattern("**/*.txt")] : []
            tags.append(TagRules.TagRule(name: "t\(index)", include: include, exclude: exclude))
        }
        var rules = TagRules(tags: tags, untagged: Bool.random(using: &random) ? .base : .warn)
        rules.limits.packSize = Int64.random(in: 2000...20000, using: &random)
        self.rules = rules
    }

    /// The files as hashed assets, without touching the disk.
    var hashedAssets: [HashedAsset] {
        files.map { file in
            HashedAsset(
                file: AssetFile(
                    path: file.path, url: URL(filePath: "/virtual/\(file.path)"), size: Int64(file.content.count),
                    modificationTime: 0, inode: 0),
                sha256: ContentHash.sha256Hex(of: file.content))
        }
    }

    /// Writes the tree below `root`.
    func write(to root: URL) throws {
        for file in files {
            let url = root.appending(path: file.path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try file.content.write(to: url)
        }
    }
}
