import ArgumentParser
import Foundation
import ODRRuntime

/// `odr hold`: keeps tags in use, as a running game would, until stdin closes or the process ends.
struct HoldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold",
        abstract: "Keep tags in use (installing what is missing) until stdin closes or the process is stopped.",
        discussion: """
            Begins a request for the tags, as a game does, and holds it: while it runs, no process \
            on the store purges the tags' packs (odr purge, odr fetch and games skip them, and \
            odr status shows them in use). The hold is a lease that dies with the process, so \
            killing it releases the packs too. Prints one line once the tags are in use.

            Examples, with CDN=http://127.0.0.1:8080/ (the second holds for 10 minutes):
              odr hold --catalog $CDN --store ./store level1 < /dev/null
              sleep 600 | odr hold --catalog $CDN --store ./store level1
            """)

    @OptionGroup var options: CatalogOptions

    @Argument(help: "The tags to hold.")
    var tags: [String]

    func validate() throws {
        guard !tags.isEmpty else { throw ValidationError("Name at least one tag to hold.") }
    }

    func run() async throws {
        try await reportingResourceErrors {
            let manager = try options.openManager()
            _ = try await loadCheckedCatalog(manager, offline: options.offline)
            let request = ResourceRequest(tags: Set(tags), manager: manager)
            try await request.beginAccessingResources()
            // Written unbuffered: a script waiting for this line must see it now.
            FileHandle.standardOutput.write(Data("holding \(tags.joined(separator: ", ")); close stdin or stop the process to release\n".utf8))
            // Reading stdin blocks a thread of its own, not one of the concurrency pool.
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                Thread {
                    _ = FileHandle.standardInput.readDataToEndOfFile()
                    continuation.resume()
                }.start()
            }
            try request.endAccessingResources()
        }
    }
}
