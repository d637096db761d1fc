import Foundation
@testable import ODRRuntime
import Testing

/// The order origins are tried in, and their back-off, on a clock the test moves.
struct OriginSetTests {
    private let primary = URL(string: "https://cdn-a.example.com/game/")!
    private let mirror = URL(string: "https://cdn-b.example.com/game/")!
    private let bucket = URL(string: "https://bucket.example.com/game/catalog.json")!

    private func origins(backOff: Duration = .seconds(60), clock: ManualClock = ManualClock(now: 1000)) -> OriginSet {
        OriginSet([primary, mirror, bucket], backOff: backOff, clock: clock)
    }

    @Test func healthyOriginsAreTriedPrimaryFirstAndURLsAreBuiltOnEach() {
        let set = origins()
        #expect(set.order() == [0, 1, 2])
        #expect(set.urls(of: "packs/ab.zip").map(\.absoluteString) == [
            "https://cdn-a.example.com/game/packs/ab.zip", "https://cdn-b.example.com/game/packs/ab.zip",
            "https://bucket.example.com/game/packs/ab.zip"])
        // An origin named by its catalog.json is its folder.
        #expect(set.origins[2].absoluteString == "https://bucket.example.com/game/")
    }

    @Test func aFailedOriginGoesLastForItsBackOffThenComesBack() {
        let clock = ManualClock(now: 1000)
        let set = origins(backOff: .seconds(30), clock: clock)
        set.markFailed(URL(string: "https://cdn-a.example.com/game/packs/ab.zip")!)
        #expect(set.order() == [1, 2, 0])
        #expect(set.isAvoided(0))
        clock.advance(29.9)
        #expect(set.order() == [1, 2, 0])
        clock.advance(0.2)
        #expect(set.order() == [0, 1, 2])
        #expect(!set.isAvoided(0))
    }

    @Test func whenEveryOriginFailedTheOneWhoseBackOffEndsFirstLeads() {
        let clock = ManualClock(now: 1000)
        let set = origins(backOff: .seconds(60), clock: clock)
        set.markFailed(mirror.appending(path: "catalog.json"))
        clock.advance(10)
        set.markFailed(bucket)
        clock.advance(10)
        set.markFailed(primary)
        // Nobody is healthy: the mirror recovers first, then the bucket, then the primary.
        #expect(set.order() == [1, 2, 0])
        clock.advance(41)
        #expect(set.order() == [1, 2, 0])
        #expect(!set.isAvoided(1) && set.isAvoided(2))
    }

    @Test func successLiftsTheBackOffAndUnknownURLsChangeNothing() {
        let set = origins()
        set.markFailed(primary)
        set.markFailed(URL(string: "https://elsewhere.example.com/game/packs/ab.zip")!)
        #expect(set.order() == [1, 2, 0])
        set.markSucceeded(primary.appending(path: "versions/1.json"))
        #expect(set.order() == [0, 1, 2])
        #expect(set.index(of: URL(string: "https://elsewhere.example.com/x")!) == nil)
    }

    @Test func theLongestMatchingBaseOwnsAURL() {
        let outer = URL(string: "https://cdn.example.com/game/")!
        let inner = URL(string: "https://cdn.example.com/game/eu/")!
        let set = OriginSet([outer, inner], clock: ManualClock(now: 0))
        #expect(set.index(of: URL(string: "https://cdn.example.com/game/eu/packs/a.zip")!) == 1)
        #expect(set.index(of: URL(string: "https://cdn.example.com/game/packs/a.zip")!) == 0)
    }

    @Test func duplicatesAreDroppedAndARequestFailsOverThroughTheRest() throws {
        let set = OriginSet([primary, primary.appending(path: "catalog.json"), mirror], clock: ManualClock(now: 0))
        #expect(set.origins == [primary, mirror])
        set.markFailed(primary)
        let request = try #require(set.request(for: "packs/ab.zip", priority: .urgent))
        #expect(request.url.absoluteString == "https://cdn-b.example.com/game/packs/ab.zip")
        #expect(request.alternateURLs.map(\.absoluteString) == ["https://cdn-a.example.com/game/packs/ab.zip"])
        #expect(OriginSet([]).request(for: "packs/ab.zip", priority: .normal) == nil)
    }

    @Test func theCatalogOfAnUnsignedOriginAsksThePrimaryFirstEvenInBackOff() {
        let set = origins()
        set.markFailed(primary)
        #expect(set.urls(of: "catalog.json").first?.host == "cdn-b.example.com")
        #expect(set.urls(of: "catalog.json", primaryFirst: true).map { $0.host ?? "" }
            == ["cdn-a.example.com", "cdn-b.example.com", "bucket.example.com"])
    }

    @Test func aNegativeBackOffCountsAsNone() {
        let set = OriginSet([primary, mirror], backOff: .seconds(-5), clock: ManualClock(now: 0))
        set.markFailed(primary)
        #expect(set.order() == [0, 1])
    }
}
