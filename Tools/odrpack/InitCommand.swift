import ArgumentParser
import Foundation
import ODRBuilder
import ODRCommandLine

/// `odrpack init ASSETS`: writes a starter rules file for an assets folder.
struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Write a starter odr.json for an assets folder: one tag per top-level folder.",
        discussion: """
            Looks at the folder's top level: each folder becomes a tag that includes it, files at \
            the top level stay untagged (the base installed with the app), and editor and OS \
            leftovers are excluded. Edit the result before the first release: merge folders that \
            load together, set priorities and the initial-install tags (docs/ODRPACK.md, \
            "Starting from odrpack init"). An existing rules file is kept unless --force is given.

            Examples:
              odrpack init assets
              odrpack init assets --rules ci/odr.json
              odrpack build assets --output out/catalog
            """
    )

    @Argument(help: ArgumentHelp("The assets folder.", valueName: "assets"))
    var assets: String

    @Option(help: ArgumentHelp("Where to write the rules (default: ASSETS/odr.json).", valueName: "file"))
    var rules: String?

    @Flag(help: "Replace an existing rules file.")
    var force = false

    func run() async throws {
        let assetsURL = URL(filePath: assets, directoryHint: .isDirectory)
        let target = rules.map { URL(filePath: $0) } ?? assetsURL.appending(path: TagRules.defaultFileName)
        try await reportingLibraryErrors {
            let starter = try StarterRules(assets: assetsURL)
            if FileManager.default.fileExists(atPath: target.path), !force {
                throw BuildError(.rulesExists, "a rules file is already there; edit it, or pass --force to replace it with starter rules",
                                 file: target.path)
            }
            // The text must be rules the builder accepts: a starter that does not build is a bug here.
            _ = try TagRules.parse(Data(starter.json.utf8), file: target.path)
            do {
                try Data(starter.json.utf8).write(to: target, options: .atomic)
            } catch {
                throw BuildError(.rulesUnwritable, "cannot write the rules file; pass --rules FILE in a folder you can write",
                                 file: target.path, cause: error)
            }
            print("Wrote \(target.path): \(starter.tags.count) tag(s), catalog id '\(starter.catalogID)'.")
            for tag in starter.tags { print("  \(tag.name)  \(tag.folder)/  \(ByteCount.format(tag.bytes))") }
            for folder in starter.skipped { print("  skipped \(folder)") }
            print("Files at the top level of \(assets) are untagged: the base the app installs. Next: edit the rules, then odrpack build \(assets) --output CATALOG.")
        }
    }
}
