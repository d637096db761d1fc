import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport

/// An assets folder and a catalog folder in one temporary directory, with helpers to build and read.
struct BuildFixture {
    let directory: TemporaryDirectory
    var assets: URL { directory.appending("assets") }
    var output: URL { directory.appending("catalog") }
    var cache: URL { directory.appending("cache.json") }
    var catalog: CatalogDirectory { CatalogDirectory(root: output) }

    init() throws {
        directory = try TemporaryDirectory(prefix: "odr-builder")
        try FileManager.default.createDirectory(at: directory.appending("assets"), withIntermediateDirectories: true)
    }

    /// The repository's SampleAssets folder.
    static let sampleAssets = SampleGame.assets

    func write(_ path: String, _ text: String) throws {
        try write(path, Data(text.utf8))
    }

    func write(_ path: String, _ data: Data) throws {
        let url = assets.appending(path: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
    }

    func options(assets: URL? = nil, output: URL? = nil, cached: Bool = true) -> BuildOptions {
        var options = BuildOptions(assets: assets ?? self.assets, output: output ?? self.output)
        options.cache = cached ? cache : nil
        return options
    }

    @discardableResult
    func build(
        assets: URL? = nil, output: URL? = nil, cached: Bool = true, configure: (inout BuildOptions) -> Void = { _ in }
    ) async throws -> BuildReport {
        var options = options(assets: assets, output: output, cached: cached)
        configure(&options)
        return try await CatalogBuilder(options: options).build()
    }

    func index(at root: URL? = nil) throws -> CatalogIndex {
        try CatalogDirectory(root: root ?? output).loadIndex()
    }

    func manifest(_ version: Int, at root: URL? = nil) throws -> VersionManifest {
        let directory = CatalogDirectory(root: root ?? output)
        return try directory.loadManifest(version: version, in: directory.loadIndex())
    }

    /// Every file of the catalog as relative path -> bytes.
    func snapshot(of root: URL? = nil) throws -> [String: Data] {
        let base = (root ?? output).standardizedFileURL
        var files: [String: Data] = [:]
        let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil)
        while let url = walker?.nextObject() as? URL {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(base.path.count + 1))
            files[relative] = try Data(contentsOf: url)
        }
        return files
    }
}

/// Runs a program and returns its exit status and combined output.
func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(filePath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
