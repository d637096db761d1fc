/// A mismatch ``ResourceStore/verify()`` found between the installed files, the manifests and the database.
public struct StoreProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The pack concerned; empty for a problem of the database that concerns no pack (a damaged
    /// trust record of a catalog).
    public var packID: String
    /// The file inside the pack, if the problem is one file.
    public var path: String?
    /// What is wrong.
    public var message: String

    /// A problem with pack `packID`, or with its file `path` when given.
    public init(packID: String, path: String? = nil, message: String) {
        self.packID = packID
        self.path = path
        self.message = message
    }

    /// The pack's short id, the file when there is one, and the message, for reports.
    public var description: String {
        packID.isEmpty ? message : "pack \(packID.prefix(12))\(path.map { " \($0)" } ?? ""): \(message)"
    }
}
