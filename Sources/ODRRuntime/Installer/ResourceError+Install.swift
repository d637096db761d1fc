#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

extension ResourceError {
    /// The runtime error for a pack the format's readers refused (or could not write).
    ///
    /// Archive problems become `integrity` with the ``FormatError`` as the cause, so callers can see
    /// exactly what was wrong (`hash-mismatch`, `unsafe-entry-name`, ...); local file errors become
    /// `storage-failure` (or `out-of-space`).
    static func installing(_ packID: String, url: URL?, _ error: any Error) -> ResourceError {
        if let error = error as? ResourceError { return error }
        guard let format = error as? FormatError else {
            return ResourceError(.storageFailure, "Pack \(packID.prefix(12)) could not be installed: \(error).", url: url,
                                 cause: StoreFailure(description: "\(error)"))
        }
        if format.code == .io {
            let full = "\(format)".contains("No space left")
            return ResourceError(full ? .outOfSpace : .storageFailure,
                                 "Pack \(packID.prefix(12)) could not be written to the store: \(format.message)", url: url, cause: format)
        }
        return ResourceError(.integrity,
                             "Pack \(packID.prefix(12)) does not match the catalog's manifest and was refused [\(format.code)]: \(format.message)",
                             url: url, cause: format)
    }
}
