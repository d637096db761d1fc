import ArgumentParser
import Foundation
import ODRBuilder
import ODRCommandLine

/// Runs a command body; a `BuildError` prints its code and message on stderr and exits with status 1.
func reportingLibraryErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as BuildError {
        ToolErrors.print(code: error.code.rawValue, message: error.detail)
        throw ExitCode(1)
    }
}

/// Writes a value as pretty JSON with sorted keys on stdout.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    var data = try encoder.encode(value)
    data.append(0x0A)
    FileHandle.standardOutput.write(data)
}
