import Foundation
import ODRBuilder
import ODRTestSupport
import Testing

/// C programs built with the real `cc` against the built `libodr` and `odr.h`, as a game's build does.
enum CProgram {
    /// The package's root folder.
    static let packageRoot = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The folder holding `odr.h`.
    static let includeDirectory = packageRoot.appending(path: "Sources/CODR/include")

    /// Compiles `source` (relative to the package root) into `directory` with warnings as errors,
    /// linked to the built library under its installed names, `libodr.so` and `libodr.so.1` (the
    /// SONAME `make install` links it with), with an rpath to them; `flags` go to `cc` too
    /// (`-fsanitize=address`).
    static func build(_ source: String, in directory: TemporaryDirectory, flags: [String] = []) async throws -> URL {
        let built = try #require(builtLibrary(product: "odrc"), "libodrc.so is not built; run swift build --build-tests first")
        let libraries = directory.appending("lib")
        try FileManager.default.createDirectory(at: libraries, withIntermediateDirectories: true)
        for name in ["libodr.so", "libodr.so.1"] {
            let installed = libraries.appending(path: name)
            if !FileManager.default.fileExists(atPath: installed.path) {
                try FileManager.default.createSymbolicLink(at: installed, withDestinationURL: built)
            }
        }
        let output = directory.appending(URL(filePath: source).deletingPathExtension().lastPathComponent)
        let result = try await runCommandOffPool("cc", [
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", includeDirectory.path] + flags + [
            packageRoot.appending(path: source).path,
            "-L", libraries.path, "-lodr", "-Wl,-rpath," + libraries.path, "-lpthread", "-o", output.path,
        ])
        try #require(result.status == 0, "cc failed on \(source):\n\(result.stderr)")
        return output
    }

    /// The lines a check program (Tests/ODRCAPITests/C/checks.h) printed, after expecting that none
    /// is a "FAIL" line, that `program` exited with 0 and that its summary line came last: a crash or
    /// an early exit would leave that line out.
    static func checkedLines(_ result: CommandResult, of program: String,
                             sourceLocation: SourceLocation = #_sourceLocation) -> [String] {
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let failed = lines.filter { $0.hasPrefix("FAIL ") }
        #expect(failed.isEmpty, "\(failed.joined(separator: "\n"))", sourceLocation: sourceLocation)
        #expect(result.status == 0, "\(program) exited with \(result.status):\n\(result.stderr)", sourceLocation: sourceLocation)
        #expect(lines.last == "checks: \(lines.filter { $0.hasPrefix("ok ") }.count) failed: 0", sourceLocation: sourceLocation)
        return lines
    }

    /// The sample game (SampleAssets) built into a catalog in `directory`: with a whole manifest
    /// unless told otherwise, since the contract checks ask about any tag at once (download sizes,
    /// hints, priorities), which a split catalog answers only for tags described first; `nil`
    /// builds as `odrpack build` does (split metadata for a new catalog).
    static func sampleCatalog(in directory: TemporaryDirectory, splitMetadata: Bool? = false) async throws -> URL {
        var options = BuildOptions(assets: packageRoot.appending(path: "SampleAssets"), output: directory.appending("catalog"))
        options.concurrency = 2
        options.splitMetadata = splitMetadata
        _ = try await CatalogBuilder(options: options).build()
        return options.output
    }
}
