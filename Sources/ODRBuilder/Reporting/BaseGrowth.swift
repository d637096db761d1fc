import ODRFormat

/// How much the `base` tag grew between two versions, and the folders that are new in it.
///
/// Every client installs `base` first, and with `"untagged": "base"` a file no tag rule matches goes
/// there without a word: a new kart folder nobody named in the rules costs every player its bytes.
/// `odrpack build` and `odrpack diff` warn (`baseGrew`) when `base`'s installed bytes grow by more
/// than `limits.baseGrowthWarning` (default 1 MiB), naming the new folders.
public struct BaseGrowth: Codable, Sendable, Equatable {
    /// The version compared from.
    public var from: Int
    /// The version compared to.
    public var to: Int
    /// The change of `base`'s installed bytes (negative when it shrank).
    public var bytes: Int64
    /// The change of the number of paths in `base`'s packs.
    public var files: Int
    /// Of the paths new in `base`, the shallowest folder of each that holds no file of `from`
    /// (`karts/newkart/`), sorted; a new path in a folder `from` already has adds none.
    public var newFolders: [String]

    /// At most this many folders are named in a warning.
    static let namedFolders = 10

    /// Compares `base` in two manifests; `nil` when `new` has no `base` tag.
    public init?(from old: VersionManifest, to new: VersionManifest) {
        let newIndex = ManifestIndex(new), oldIndex = ManifestIndex(old)
        guard let after = newIndex.tag(named: TagRules.baseTag) else { return nil }
        let before = oldIndex.tag(named: TagRules.baseTag)
        func paths(_ tag: TagRecord?, in index: ManifestIndex) -> Set<String> {
            Set((tag?.packs ?? []).flatMap { index.files(inPack: $0).map(\.path) })
        }
        let oldPaths = paths(before, in: oldIndex), newPaths = paths(after, in: newIndex)
        from = old.version
        to = new.version
        bytes = after.installedBytes - (before?.installedBytes ?? 0)
        files = newPaths.count - oldPaths.count
        // Every folder that holds a file of `from`, at any depth.
        var oldFolders = Set<Substring>()
        for file in old.files {
            var path = Substring(file.path)
            while let slash = path.lastIndex(of: "/") {
                path = path[..<slash]
                guard oldFolders.insert(path).inserted else { break }
            }
        }
        var folders = Set<String>()
        for path in newPaths.subtracting(oldPaths) {
            var end = path.startIndex
            while let slash = path[end...].firstIndex(of: "/") {
                let folder = path[..<slash]
                if !oldFolders.contains(folder) {
                    folders.insert(folder + "/")
                    break
                }
                end = path.index(after: slash)
            }
        }
        newFolders = folders.sorted()
    }

    /// The `baseGrew` warning when `base` grew by more than `threshold` bytes; `nil` otherwise, or
    /// when `threshold` is 0 (the warning is off).
    public func warning(threshold: Int64) -> BuildWarning? {
        guard threshold > 0, bytes > threshold else { return nil }
        let named = newFolders.prefix(Self.namedFolders).joined(separator: ", ")
            + (newFolders.count > Self.namedFolders ? ", ... \(newFolders.count - Self.namedFolders) more" : "")
        let filesText = files == 0 ? "" : " (\(files > 0 ? "+" : "")\(files) files)"
        return BuildWarning(
            .baseGrew,
            "base grew by \(ByteCount.format(bytes))\(filesText) since version \(from), over the \(ByteCount.format(threshold)) of limits.baseGrowthWarning: "
                + (newFolders.isEmpty
                    ? "every client installs base first; tag the new files in a tag's rules, or name them in base's rules if every client needs them"
                    : "new folders \(named); add them to a tag's rules, or to base's rules if every client needs them"))
    }
}
