import ArgumentParser
import Foundation

/// The one error format of every swift-odr tool: `error[<code>]: <message>` on stderr, where the
/// message names the file or key it is about when there is one. Usage mistakes (an unknown flag, a
/// value that does not parse) use the code `usage` and exit with status 64; a failed command exits
/// with status 1.
public enum ToolErrors {
    /// Writes `error[code]: message` as one line on stderr.
    public static func print(code: String, message: String) {
        FileHandle.standardError.write(Data("error[\(code)]: \(message)\n".utf8))
    }

    /// Writes `error` in the tools' format: a Foundation or POSIX error becomes `io` with its
    /// description, never a raw `NSError` dump.
    public static func print(unexpected error: any Error) {
        let nsError = error as NSError
        var message = nsError.localizedDescription
        if let path = nsError.userInfo[NSFilePathErrorKey] as? String, !message.contains(path) { message += " (\(path))" }
        print(code: "io", message: message)
    }
}

extension AsyncParsableCommand {
    /// Parses the command line and runs the command, printing every error in the format of
    /// ``ToolErrors``: the tools' `main()` calls it instead of ArgumentParser's, whose errors read
    /// `Error: ...`.
    public static func runReportingErrors() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withReportedError: error)
        }
    }

    private static func exit(withReportedError error: any Error) -> Never {
        let code = exitCode(for: error)
        if code == .success || error is ExitCode || error is CleanExit {
            // --help, --version, or a command that printed its own error and chose its status.
            self.exit(withError: error)
        }
        if error is ValidationError || code == .validationFailure {
            let full = fullMessage(for: error)
            let text = full.hasPrefix("Error: ") ? String(full.dropFirst("Error: ".count)) : full
            FileHandle.standardError.write(Data("error[usage]: \(text)\n".utf8))
            Foundation.exit(code.rawValue)
        }
        ToolErrors.print(unexpected: error)
        Foundation.exit(ExitCode.failure.rawValue)
    }
}
