import Foundation

extension ChildProcess {
    /// The path of `name` (`odr`, `odrpack`) built next to this odrbench executable.
    ///
    /// - Throws: ``ValidationFailure`` naming the build command when it is missing.
    static func sibling(_ name: String) throws -> String {
        let path = URL(filePath: selfExecutable).deletingLastPathComponent().appending(path: name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ValidationFailure("\(name) is not built next to odrbench: run swift build -c release --product \(name)")
        }
        return path
    }

    /// Runs `sync`, so the writeback of one timed step is not charged to the next.
    static func syncFileSystems() throws {
        _ = try measure(["/usr/bin/sync"]).succeeded()
    }
}

extension ChildMeasurement {
    /// This measurement when its command exited 0.
    ///
    /// - Throws: ``ValidationFailure`` with the exit status and the command's output.
    func succeeded() throws -> ChildMeasurement {
        guard status == 0 else { throw ValidationFailure("a child process failed (\(status)): \(output)") }
        return self
    }
}
