import Foundation
@testable import ODRFormat
import ODRTestSupport
import Testing

/// The bytes the cross-check vectors were computed over: SplitMix64 from seed 23, each draw as 8
/// little-endian bytes (the same generator written out in Python for `fastcdc`).
private func vectorInput(count: Int) -> [UInt8] {
    var random = SplitMix64(seed: 23)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 8)
    while bytes.count < count {
        let word = random.next()
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }
    return Array(bytes.prefix(count))
}

/// Chunk sizes of `bytes`, fed to the chunker in buffers of `buffer` bytes.
private func chunkSizes(_ bytes: [UInt8], _ parameters: FastCDC.Parameters, buffer: Int = 1 << 20) -> [Int64] {
    var chunker = FastCDC(parameters)
    var sizes: [Int64] = []
    var start = 0
    bytes.withUnsafeBytes { raw in
        while start < raw.count {
            let end = min(raw.count, start + buffer)
            chunker.consume(UnsafeRawBufferPointer(rebasing: raw[start..<end])) { sizes.append($0) }
            start = end
        }
    }
    if let last = chunker.finish() { sizes.append(last) }
    return sizes
}

struct FastCDCTests {
    /// Boundaries computed by PyPI's `fastcdc` 1.7.0, `fastcdc.fastcdc` (its Cython `fastcdc_cy`,
    /// equal to its pure-Python `fastcdc_py`) over the same bytes and sizes:
    /// `[c.length for c in fastcdc(data[:n], min_size=..., avg_size=..., max_size=...)]`.
    struct Vector: Sendable, CustomTestStringConvertible {
        var minimum: Int, average: Int, maximum: Int, count: Int
        var sizes: [Int64]
        var testDescription: String { "\(minimum)/\(average)/\(maximum) over \(count) bytes" }
    }

    static let vectors: [Vector] = [
        // FastCDC.Parameters.standard.
        Vector(minimum: 64 << 10, average: 256 << 10, maximum: 1 << 20, count: 8 << 20, sizes: [
            287448, 216917, 259089, 189102, 682619, 296325, 88134, 212128, 168305, 180825, 277630, 256681, 309432, 157664,
            528873, 152779, 224014, 343953, 279183, 84593, 227985, 244222, 181120, 250939, 643070, 222680, 512508, 290409,
            328936, 101522, 180112, 9411,
        ]),
        Vector(minimum: 4096, average: 16384, maximum: 65536, count: 1 << 20, sizes: [
            16331, 12197, 16210, 12701, 7630, 40077, 23501, 26053, 6244, 10391, 7312, 16360, 16689, 11288, 34299, 11390, 18775,
            22341, 14177, 8879, 13957, 11202, 31203, 30119, 22884, 10293, 10765, 4506, 19708, 16883, 20616, 23985, 16275, 13728,
            10277, 5717, 20557, 35031, 10834, 29690, 6189, 24934, 21590, 19666, 12049, 5442, 12147, 34275, 7256, 16109, 11808,
            13842, 16648, 29015, 10750, 19761, 25304, 19052, 20081, 6814, 7810, 13392, 3567,
        ]),
        // An average that is not a power of two, and cuts forced at the maximum.
        Vector(minimum: 1000, average: 3000, maximum: 9000, count: 1 << 18, sizes: [
            4041, 1379, 3924, 4247, 1014, 1726, 2721, 1537, 3292, 2380, 2267, 5798, 2259, 8153, 4720, 2184, 1541, 3049, 1207, 1848,
            5782, 5601, 1546, 1777, 2734, 3207, 4387, 1805, 1625, 2250, 3381, 3857, 1806, 2654, 3447, 1692, 1760, 3879, 1071, 4366,
            7446, 3287, 3548, 1161, 5095, 8465, 2731, 3068, 1985, 2344, 1740, 1363, 2914, 2182, 6092, 3446, 3866, 6000, 4094, 2204,
            4062, 2138, 9000, 1820, 3731, 2552, 3002, 2282, 1247, 2205, 9000, 7447, 1730, 1666, 9000, 2178, 3217, 3377, 1545,
        ]),
    ]

    @Test(arguments: vectors)
    func boundariesMatchTheReferenceImplementation(_ vector: Vector) throws {
        let parameters = try FastCDC.Parameters(minimumSize: vector.minimum, averageSize: vector.average, maximumSize: vector.maximum)
        if vector.average == 256 << 10 { #expect(parameters == .standard) }
        let input = vectorInput(count: vector.count)
        #expect(chunkSizes(input, parameters) == vector.sizes)
        // The cuts depend on the bytes only, not on how they arrive.
        #expect(chunkSizes(input, parameters, buffer: 4093) == vector.sizes)
        #expect(chunkSizes(input, parameters, buffer: 1) == vector.sizes)
    }

    @Test func repetitiveTextIsCutAtTheMaximum() throws {
        // fastcdc: [65536] * 8 for this text with 4096/16384/65536.
        let text = Array(String(repeating: "the quick brown fox jumps over the lazy dog\n", count: 20_000).utf8.prefix(1 << 19))
        let parameters = try FastCDC.Parameters(minimumSize: 4096, averageSize: 16384, maximumSize: 65536)
        #expect(chunkSizes(text, parameters) == [Int64](repeating: 65536, count: 8))
    }

    @Test func anEditMovesOnlyTheCutsNearIt() throws {
        var input = vectorInput(count: 1 << 20)
        let parameters = try FastCDC.Parameters(minimumSize: 4096, averageSize: 16384, maximumSize: 65536)
        let before = chunkSizes(input, parameters)
        input.insert(contentsOf: [1, 2, 3, 4, 5], at: 500_000)
        let after = chunkSizes(input, parameters)
        let ends = { (sizes: [Int64]) in Set(sizes.reduce(into: [Int64]()) { $0.append(($0.last ?? 0) + $1) }) }
        let shifted = Set(ends(before).filter { $0 > 500_000 }.map { $0 + 5 })
        let kept = ends(after).filter { $0 > 500_000 + 65536 }
        #expect(!kept.isEmpty && kept.allSatisfy { shifted.contains($0) })
    }

    @Test func parametersOutOfRangeAreRefused() {
        for (minimum, average, maximum) in [(0, 256, 1024), (64, 100, 1024), (64, 256, 512), (512, 256, 1024), (64, 256, Int(FileChunk.maximumSize) + 1)] {
            #expect(throws: FormatError.self) { try FastCDC.Parameters(minimumSize: minimum, averageSize: average, maximumSize: maximum) }
        }
    }
}

struct ChunkTableValidationTests {
    static let digest = String(repeating: "d", count: 64)

    private func check(_ chunks: [FileChunk], size: Int64, storedSize: Int64, method: CompressionMethod = .stored) throws(FormatError) {
        try FileChunk.validate(chunks, size: size, storedSize: storedSize, method: method, path: "big.pak", field: "files[0]")
    }

    @Test func aTableThatTilesItsFileIsValid() throws {
        try check([FileChunk(size: 10, storedSize: 10, sha256: Self.digest), FileChunk(size: 5, storedSize: 5, sha256: Self.digest)], size: 15, storedSize: 15)
        try check([FileChunk(size: 10, storedSize: 4, sha256: Self.digest), FileChunk(size: 5, storedSize: 9, sha256: Self.digest)], size: 15, storedSize: 13, method: .deflate)
        try check([], size: 99, storedSize: 7, method: .deflate)
    }

    struct Breakage: Sendable, CustomTestStringConvertible {
        var name: String
        var chunks: [FileChunk]
        var size: Int64, storedSize: Int64
        var method: CompressionMethod
        var field: String
        var testDescription: String { name }
    }

    static let breakages: [Breakage] = {
        let d = digest
        return [
            Breakage(name: "sizes short of the file (a gap)", chunks: [FileChunk(size: 10, storedSize: 10, sha256: d)], size: 11, storedSize: 10, method: .deflate, field: "files[0].chunks"),
            Breakage(name: "sizes past the file (an overlap)", chunks: [FileChunk(size: 10, storedSize: 10, sha256: d), FileChunk(size: 2, storedSize: 2, sha256: d)], size: 11, storedSize: 11, method: .stored, field: "files[0].chunks"),
            Breakage(name: "stored sizes not the entry's", chunks: [FileChunk(size: 10, storedSize: 3, sha256: d)], size: 10, storedSize: 4, method: .deflate, field: "files[0].chunks"),
            Breakage(name: "a zero-length chunk", chunks: [FileChunk(size: 10, storedSize: 10, sha256: d), FileChunk(size: 0, storedSize: 0, sha256: d)], size: 10, storedSize: 10, method: .stored, field: "files[0].chunks[1]"),
            Breakage(name: "a negative chunk", chunks: [FileChunk(size: 20, storedSize: 20, sha256: d), FileChunk(size: -10, storedSize: -10, sha256: d)], size: 10, storedSize: 10, method: .stored, field: "files[0].chunks[1]"),
            Breakage(name: "a chunk over the maximum", chunks: [FileChunk(size: FileChunk.maximumSize + 1, storedSize: 100, sha256: d)], size: FileChunk.maximumSize + 1, storedSize: 100, method: .deflate, field: "files[0].chunks[0]"),
            Breakage(name: "a stored entry's chunk with another stored size", chunks: [FileChunk(size: 10, storedSize: 9, sha256: d), FileChunk(size: 5, storedSize: 6, sha256: d)], size: 15, storedSize: 15, method: .stored, field: "files[0].chunks[0].storedSize"),
            Breakage(name: "an uppercase digest", chunks: [FileChunk(size: 10, storedSize: 10, sha256: d.uppercased())], size: 10, storedSize: 10, method: .stored, field: "files[0].chunks[0].sha256"),
            Breakage(name: "a short digest", chunks: [FileChunk(size: 10, storedSize: 10, sha256: "abc")], size: 10, storedSize: 10, method: .stored, field: "files[0].chunks[0].sha256"),
            Breakage(name: "too many chunks", chunks: Array(repeating: FileChunk(size: 1, storedSize: 1, sha256: d), count: FileChunk.maximumCount + 1), size: Int64(FileChunk.maximumCount + 1), storedSize: Int64(FileChunk.maximumCount + 1), method: .stored, field: "files[0].chunks"),
        ]
    }()

    @Test(arguments: breakages)
    func aBrokenTableIsRefusedNamingTheField(_ breakage: Breakage) {
        let error = #expect(throws: FormatError.self) {
            try check(breakage.chunks, size: breakage.size, storedSize: breakage.storedSize, method: breakage.method)
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == breakage.field)
    }
}
