import Foundation

/// A fresh directory under the system temporary directory, removed when the value is released.
///
/// ```swift
/// let dir = try TemporaryDirectory()
/// try Data("x".utf8).write(to: dir.url.appending(path: "a.txt"))
/// ```
public final class TemporaryDirectory: Sendable {
    /// The directory's location; it exists until this value is deinitialized.
    public let url: URL

    /// Creates an empty directory whose name starts with `prefix`.
    public init(prefix: String = "odr-test") throws {
        let base = URL(filePath: NSTemporaryDirectory(), directoryHint: .isDirectory)
        url = base.appending(path: "\(prefix)-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `relative` inside this directory.
    public func appending(_ relative: String) -> URL {
        url.appending(path: relative)
    }

    /// Every regular file below this directory, as paths relative to it, sorted.
    public func allFiles() -> [String] {
        guard let walker = FileManager.default.enumerator(
            at: url, includingPropertiesForKeys: [.isRegularFileKey, .isSymbolicLinkKey]
        ) else { return [] }
        var result: [String] = []
        let rootPath = url.standardizedFileURL.path
        for case let file as URL in walker {
            let values = try? file.resourceValues(forKeys: [.isRegularFileKey, .isSymbolicLinkKey])
            if values?.isRegularFile == true || values?.isSymbolicLink == true {
                var path = file.standardizedFileURL.path
                if path.hasPrefix(rootPath) { path.removeFirst(rootPath.count) }
                result.append(path.hasPrefix("/") ? String(path.dropFirst()) : path)
            }
        }
        return result.sorted()
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
