import Foundation
@testable import ODRCAPI
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Tests/ODRCAPITests/C/lifetime_checks.c built with AddressSanitizer and run under strace: no
/// callback after the call that stops it, begin is synchronous, C messages, enumeration, the
/// network probe, odr_shutdown and its threads, and no child process.
@Suite(.enabled(if: builtLibrary(product: "odrc") != nil, "libodrc.so is not built"))
struct LifetimeTests {
    @Test func callbacksEndWithTheirRequestsAndTheLibrarySpawnsNothingAndStopsItsThreads() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-c-lifetime")
        let catalog = try await CProgram.sampleCatalog(in: directory)
        let checks = try await CProgram.build("Tests/ODRCAPITests/C/lifetime_checks.c", in: directory,
                                              flags: ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"])
        let trace = directory.appending("strace.txt")
        let strace = ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) }
        #expect(strace != nil, "strace is not installed: run make deps")
        // Leak checking is off: the Swift runtime keeps its caches for the life of the process.
        var command = ["ASAN_OPTIONS=detect_leaks=0:abort_on_error=0"]
        if let strace { command += [strace, "-f", "-qq", "-e", "trace=execve,execveat,fork,vfork,clone,clone3", "-o", trace.path] }
        command += [checks.path]
        // Slow, so that begins are still downloading when they are destroyed, ended or cancelled.
        let result = try await withTestServer(root: catalog, conditions: NetworkConditions(bytesPerSecond: 100_000)) { server in
            try await runCommandOffPool(command[0], Array(command.dropFirst()) + [server.baseURL.absoluteString, directory.appending("store").path])
        }
        let lines = CProgram.checkedLines(result, of: "lifetime_checks")
        #expect(!result.stderr.contains("AddressSanitizer"), "\(result.stderr)")
        for name in ["after odr_request_destroy every callback has run once; its context is freed at once",
                     "a callback destroys its own request without a deadlock",
                     "when begin returns the request is requested", "a second begin at once is begin-twice",
                     "the end-before-begin message names odr_request_begin", "the probe is never called after odr_manager_destroy",
                     "after odr_shutdown only libdispatch's manager thread stays"] {
            #expect(lines.contains("ok \(name)"), "missing check: \(name)")
        }

        // The lists are the catalog's.
        let manifest = try JSONDecoder().decode(VersionManifestProbe.self, from: Data(contentsOf: catalog.appending(path: "versions/1.json")))
        let listed = lines.filter { $0.hasPrefix("tag ") }.map { $0.split(separator: " ")[1] }.map(String.init)
        #expect(listed == manifest.tags.map(\.name))
        let files = lines.filter { $0.hasPrefix("file level1 ") }.map { $0.split(separator: " ") }
        let map = try #require(files.first { $0[2] == "Levels/Level1/map.json" }, "level1's map is listed")
        let original = try Data(contentsOf: CProgram.packageRoot.appending(path: "SampleAssets/Levels/Level1/map.json"))
        #expect(map[3] == "\(original.count)")

        // No process: one execve (the program's own), no fork, and every clone is a thread.
        if strace != nil {
            let calls = try String(contentsOf: trace, encoding: .utf8).split(separator: "\n").map(String.init)
            let execs = calls.filter { $0.contains("execve(") || $0.contains("execveat(") }
            #expect(execs.count == 1 && execs.first?.contains(checks.path) == true, "\(execs.joined(separator: "\n"))")
            #expect(!calls.contains { $0.contains("fork(") }, "a fork")
            let clones = calls.filter { ($0.contains("clone(") || $0.contains("clone3(")) && !$0.contains("resumed>") }
            #expect(!clones.isEmpty, "strace saw the library's threads start")
            let processes = clones.filter { !$0.contains("CLONE_THREAD") }
            #expect(processes.isEmpty, "the library started a process:\n\(processes.joined(separator: "\n"))")
        }
    }

    /// The tags of a version file, by name.
    struct VersionManifestProbe: Decodable {
        struct Tag: Decodable { let name: String }
        let tags: [Tag]
    }

    @Test func cMessagesNameCFunctionsWhileSwiftKeepsItsOwn() throws {
        // Every message literal of the runtime that names a Swift method: its C form names none.
        let sources = CProgram.packageRoot.appending(path: "Sources/ODRRuntime")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var swiftNames = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") where line.contains("ResourceError(") || line.contains(": \"") {
                for literal in line.matches(of: /"([^"\\]*(?:\\.[^"\\]*)*)"/) {
                    let text = String(literal.1)
                    guard text.contains(/[a-z][A-Za-z]+\(\)/) || text.contains("downloadPolicy.") else { continue }
                    swiftNames += 1
                    let translated = CMessages.translated(text)
                    #expect(!translated.contains(/[a-z][A-Za-z]+\(\)/) && !translated.contains("downloadPolicy."), "\(file.lastPathComponent): \(translated)")
                }
            }
        }
        #expect(swiftNames >= 3, "the runtime's messages that name Swift API were found")
        // Swift callers still read the Swift names.
        let error = ResourceError(.endBeforeBegin, "The request was never begun; call beginAccessingResources() first.")
        #expect(error.message.contains("beginAccessingResources()"))
        #expect(CLastError.describe(error).1.contains("call odr_request_begin first"))
    }
}
