import Testing

@testable import ODRServe

/// The conditioner's decisions, without HTTP: what `--seed` promises.
struct SeedTests {
    private func decisions(seed: UInt64, key: String, count: Int) -> [String] {
        let conditioner = Conditioner(conditions: NetworkConditions(failRate: 0.5, truncateRate: 0.5, corruptRate: 0.5, seed: seed))
        return (0..<count).map { _ in
            var request = conditioner.admit(key: key, path: "/p")
            let shaping = conditioner.shapeBody(of: &request, length: 1000)
            return "\(request.failStatus ?? 0) \(shaping.truncateAfter ?? -1) \(shaping.corruptOffsets)"
        }
    }

    @Test func sameSeedAndRequestsGiveTheSameDecisions() {
        #expect(decisions(seed: 42, key: "GET /a", count: 50) == decisions(seed: 42, key: "GET /a", count: 50))
    }

    @Test func anotherSeedGivesOtherDecisions() {
        #expect(decisions(seed: 42, key: "GET /a", count: 50) != decisions(seed: 43, key: "GET /a", count: 50))
    }

    @Test func otherRequestsInBetweenDoNotShiftADecision() {
        let conditions = NetworkConditions(failRate: 0.5, seed: 7)
        let alone = Conditioner(conditions: conditions)
        let busy = Conditioner(conditions: conditions)
        var lonely: [Int?] = []
        var crowded: [Int?] = []
        for index in 0..<30 {
            lonely.append(alone.admit(key: "GET /a", path: "/a").failStatus)
            for other in 0..<(index % 3) { _ = busy.admit(key: "GET /b\(other)", path: "/b") }
            crowded.append(busy.admit(key: "GET /a", path: "/a").failStatus)
        }
        #expect(lonely == crowded)
        #expect(lonely.contains(nil) && lonely.contains(503))
    }

    @Test func ratesMatchTheirProbabilityOverManyRequests() {
        let conditioner = Conditioner(conditions: NetworkConditions(failRate: 0.25, seed: 1))
        let failures = (0..<4000).filter { conditioner.admit(key: "GET /x\($0)", path: "/x").failStatus != nil }.count
        #expect((800...1200).contains(failures))
    }

    @Test(arguments: [-0.1, 1.1, Double.nan])
    func ratesOutsideZeroToOneAreInvalid(rate: Double) {
        #expect(throws: ServeError.self) { try NetworkConditions(failRate: rate).validate() }
        #expect(throws: ServeError.self) { try NetworkConditions(corruptRate: rate).validate() }
    }
}
