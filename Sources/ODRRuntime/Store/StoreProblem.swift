/// A mismatch ``ResourceStore/verify()`` found between the installed files, the manifests and the database.
public struct StoreProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The pack concerned.
    public var packID: String
    /// The file inside the pack, if the problem is one file.
    public var path: String?
    /// What is wrong.
    public var message: String

    public init(packID: String, path: String? = nil, message: String) {
        self.packID = packID
        self.path = path
        self.message = message
    }

    public var description: String {
        "pack \(packID.prefix(12))\(path.map { " \($0)" } ?? ""): \(message)"
    }
}
