import Foundation

/// The package's executable `name` (`odrpack`, `odr`, ...) as built next to the test bundle, or
/// nil when the build did not make it (then tests that need it should be skipped).
///
/// ```swift
/// @Suite(.enabled(if: builtExecutable(named: "odrpack") != nil)) struct CommandTests { ... }
/// ```
public func builtExecutable(named name: String) -> URL? {
    builtProduct(named: name)
}

/// The package's dynamic library product `name` (`libodrc.so` for the product `odrc`) as built next
/// to the test bundle, or nil when the build did not make it.
public func builtLibrary(product name: String) -> URL? {
    builtProduct(named: "lib\(name).so")
}

private func builtProduct(named name: String) -> URL? {
    let candidates = [Bundle.main.executableURL, Bundle.main.bundleURL, URL(filePath: CommandLine.arguments[0])]
    for candidate in candidates.compactMap({ $0 }) {
        let url = candidate.deletingLastPathComponent().appending(path: name)
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    return nil
}
