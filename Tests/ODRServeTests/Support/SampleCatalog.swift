import Foundation
import ODRTestSupport

/// The files most tests serve: a mutable catalog.json, a version manifest and two packs.
enum SampleCatalog {
    static let catalogJSON = Data(#"{"id":"sample","serial":3,"distributions":{"live":7}}"#.utf8)
    static let manifest = Data(#"{"version":7,"packs":[]}"#.utf8)
    static let pack = deterministicBytes(count: 3 * 1024 * 1024 + 17, seed: 1)
    static let smallPack = deterministicBytes(count: 10, seed: 2)

    static let packPath = "packs/0123abcd.zip"
    static let smallPackPath = "packs/small.zip"

    static var files: [String: Data] {
        [
            "catalog.json": catalogJSON,
            "versions/7.json": manifest,
            packPath: pack,
            smallPackPath: smallPack,
            "notes/readme.txt": Data("hello\n".utf8),
            "empty.bin": Data(),
        ]
    }
}
