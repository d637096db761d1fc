import Foundation
import ODRBuilder
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// TUF's attacks against a signed catalog served over real loopback HTTP: each tampered catalog
/// gets its exact error code, installs nothing, and leaves the store verified and serving the
/// packs it had (docs/SECURITY.md names these tests).
struct SignedCatalogTests {
    static let builderSeed = Data(0..<32)

    /// A signed game catalog, a clock the test moves, and managers that trust the builder's key.
    struct World {
        let fixture: ManagerFixture
        let key: SigningKey
        let clock: ManualClock

        static func make(keys: [SigningKey]? = nil) async throws -> World {
            let fixture = try ManagerFixture.unbuilt(bigBytes: 100_000)
            let key = try SigningKey(seed: SignedCatalogTests.builderSeed)
            let world = World(fixture: fixture, key: key, clock: ManualClock(now: Date().timeIntervalSince1970))
            try await fixture.game.build(signing: world.signing(keys ?? [key]))
            return world
        }

        var root: URL { fixture.game.catalog }
        var catalogFile: URL { root.appending(path: CatalogIndex.fileName) }

        func signing(_ keys: [SigningKey]) throws -> CatalogSigning {
            let clock = clock
            return try CatalogSigning(keys: keys, now: { Date(timeIntervalSince1970: clock.now()) })
        }

        func manager(url: URL, store: String = "store", trusting keys: [PublicSigningKey]? = nil, threshold: Int = 1,
                     _ configure: (inout ResourceManager.Configuration) -> Void = { _ in }) throws -> ResourceManager {
            try fixture.manager(url: url, store: store) { configuration in
                configuration.trustedKeys = keys ?? [key.publicKey]
                configuration.signatureThreshold = threshold
                configuration.clock = clock
                configure(&configuration)
            }
        }

        /// Rewrites the served `catalog.json` through `change`, keeping whatever signatures it has.
        func editServedCatalog(_ change: (inout CatalogIndex) throws -> Void) throws {
            var index = try CatalogIndex.decode(from: Data(contentsOf: catalogFile))
            try change(&index)
            try index.encoded().write(to: catalogFile)
        }

        /// Changes an asset in `big/` and builds (signed) the next version.
        func publishNextVersion(signedBy keys: [SigningKey]? = nil, seed: UInt64 = 99) async throws {
            try fixture.game.write("big/level.json", deterministicBytes(count: 5000, seed: seed))
            try await fixture.game.build(signing: signing(keys ?? [key]))
        }
    }

    /// Prepares a manager over the genuine catalog and installs `small`; then `tamper` changes
    /// what the server serves, and `attempt` must fail with `code`. Afterwards the store is
    /// intact, nothing new was installed, the version in use is unchanged, and `small` serves.
    func expectRefusal(_ code: ResourceError.Code, world: World, trusting keys: [PublicSigningKey]? = nil, threshold: Int = 1,
                       configure: @escaping (inout ResourceManager.Configuration) -> Void = { _ in },
                       tamper: @escaping (URL) async throws -> Void,
                       attempt: @escaping (ResourceManager) async throws(ResourceError) -> Void = { try await $0.checkForUpdates() },
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await withTestServer(root: world.root) { server in
            let manager = try world.manager(url: server.baseURL, trusting: keys, threshold: threshold, configure)
            try await manager.prepare()
            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            try small.endAccessingResources()
            let installed = try manager.store.installedPackIDs()
            let version = manager.currentVersion

            try await tamper(server.baseURL)
            do throws(ResourceError) {
                try await attempt(manager)
                Issue.record("the tampered catalog was accepted", sourceLocation: sourceLocation)
            } catch {
                #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
                #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
            }
            #expect(try manager.store.installedPackIDs() == installed, "nothing new installed", sourceLocation: sourceLocation)
            #expect(try manager.store.verify().isEmpty, "the store still verifies", sourceLocation: sourceLocation)
            #expect(manager.currentVersion == version, sourceLocation: sourceLocation)
            let again = ResourceRequest(tags: ["small"], manager: manager)
            #expect(await again.conditionallyBeginAccessingResources(), "installed packs keep serving", sourceLocation: sourceLocation)
            #expect(again.path(forResource: "small/map.json").map { FileManager.default.fileExists(atPath: $0) } == true,
                    sourceLocation: sourceLocation)
            try again.endAccessingResources()
        }
    }

    // MARK: Arbitrary installation, malicious mirrors, unsigned replacement

    @Test func catalogChangedWithoutResigningIsUntrusted() async throws {
        let world = try await World.make()
        try await expectRefusal(.untrustedCatalog, world: world, tamper: { _ in
            try world.editServedCatalog { $0.serial += 10 }
        })
    }

    @Test func catalogSignedByAnotherKeyIsUntrusted() async throws {
        let world = try await World.make()
        let mirror = SigningKey.generate()
        try await expectRefusal(.untrustedCatalog, world: world, tamper: { _ in
            try await world.publishNextVersion(signedBy: [mirror])
        })
    }

    @Test func unsignedCatalogNeverReplacesASignedOne() async throws {
        let world = try await World.make()
        try await expectRefusal(.untrustedCatalog, world: world, tamper: { _ in
            try world.editServedCatalog { index in
                index.serial += 1
                index.signatures = nil
                index.expires = nil
            }
        })
    }

    // MARK: Extraneous dependencies, wrong software, mix-and-match

    @Test func manifestThatDiffersFromItsPinIsIntegrity() async throws {
        let world = try await World.make()
        try await expectRefusal(.integrity, world: world, tamper: { _ in
            try await world.publishNextVersion()
            // The CDN serves version 2's manifest with an extra initial-install tag (an extraneous dependency).
            let path = world.root.appending(path: "versions/2.json")
            var manifest = try VersionManifest.decode(from: Data(contentsOf: path))
            manifest.initialInstallTags = ["big"]
            try manifest.encoded().write(to: path)
        })
    }

    @Test func manifestOfAnotherVersionIsIntegrity() async throws {
        let world = try await World.make()
        try await expectRefusal(.integrity, world: world, tamper: { _ in
            try await world.publishNextVersion()
            // Mix and match: version 1's (genuine) content served as version 2.
            var old = try VersionManifest.decode(from: Data(contentsOf: world.root.appending(path: "versions/1.json")))
            old.version = 2
            try old.encoded().write(to: world.root.appending(path: "versions/2.json"))
        })
    }

    @Test func packChangedOnTheServerIsIntegrity() async throws {
        let world = try await World.make()
        let big = try #require(try world.fixture.game.manifest(1).packs.first { $0.tags == ["big"] })
        try await expectRefusal(.integrity, world: world, tamper: { _ in
            // Wrong software: the CDN serves other bytes under the pack's name.
            let path = world.root.appending(path: PackRecord.archivePath(forID: big.id))
            var bytes = try Data(contentsOf: path)
            for offset in stride(from: 200, to: bytes.count - 200, by: 997) { bytes[offset] ^= 0xFF }
            try bytes.write(to: path)
        }, attempt: { manager async throws(ResourceError) in
            try await ResourceRequest(tags: ["big"], manager: manager).beginAccessingResources()
        })
    }

    // MARK: Rollback, fast-forward, freeze

    @Test func olderSignedCatalogIsRollback() async throws {
        let world = try await World.make()
        let first = try Data(contentsOf: world.catalogFile)
        try await world.publishNextVersion()
        try await expectRefusal(.catalogRollback, world: world, tamper: { _ in
            try first.write(to: world.catalogFile)
        })
    }

    @Test func forgedHugeSerialDoesNotLockOutTheGenuineCatalog() async throws {
        let world = try await World.make()
        let genuine = try Data(contentsOf: world.catalogFile)
        let attacker = SigningKey.generate()
        try await withTestServer(root: world.root) { server in
            let manager = try world.manager(url: server.baseURL)
            try await manager.prepare()
            var forged = try CatalogIndex.decode(from: genuine)
            forged.serial = 1_000_000
            try forged.signed(with: [attacker], expires: Date(timeIntervalSince1970: world.clock.now() + 86_400)).encoded().write(to: world.catalogFile)
            await #expect(throws: ResourceError.self) { try await manager.checkForUpdates() }
            #expect(try manager.store.followedCatalog(url: server.baseURL)?.highestSerial == 1, "the forged serial was not recorded")

            try genuine.write(to: world.catalogFile)
            try await world.publishNextVersion()
            #expect(try await manager.checkForUpdates() == 2, "the genuine next catalog is still accepted")
        }
    }

    @Test func expiredCatalogFromTheNetworkIsRefused() async throws {
        let world = try await World.make()
        try await expectRefusal(.catalogExpired, world: world, tamper: { _ in
            world.clock.advance(CatalogSigning.defaultExpiresIn + 60)
        })
    }

    @Test func expiredStoredCatalogServesInstalledPacksOfflineButInstallsNothing() async throws {
        let world = try await World.make()
        try await withTestServer(root: world.root) { server in
            let first = try world.manager(url: server.baseURL)
            try await first.prepare()
            let small = ResourceRequest(tags: ["small"], manager: first)
            try await small.beginAccessingResources()
            try small.endAccessingResources()
            let installed = try first.store.installedPackIDs()
            let packRequests = server.requests().filter { $0.path.hasPrefix("/packs/") }.count

            world.clock.advance(CatalogSigning.defaultExpiresIn + 60)
            // A new launch, offline: the stored copy serves, and says it is expired.
            let manager = try world.manager(url: server.baseURL)
            let client = CatalogClient(catalogURL: server.baseURL, store: manager.store, transport: try TransferEngine(),
                                       trust: manager.configuration.trust)
            #expect(try client.storedSnapshot()?.isExpired == true)
            try await manager.prepare(online: false)
            #expect(manager.isCatalogExpired && !first.isCatalogExpired)
            let again = ResourceRequest(tags: ["small"], manager: manager)
            #expect(await again.conditionallyBeginAccessingResources())
            #expect(again.path(forResource: "small/map.json").map { FileManager.default.fileExists(atPath: $0) } == true)
            try again.endAccessingResources()
            let big = ResourceRequest(tags: ["big"], manager: manager)
            do throws(ResourceError) {
                try await big.beginAccessingResources()
                Issue.record("installed from an expired catalog")
            } catch {
                #expect(error.code == .catalogExpired)
            }
            #expect(try manager.store.installedPackIDs() == installed)
            #expect(try manager.store.verify().isEmpty)
            #expect(server.requests().filter { $0.path.hasPrefix("/packs/") }.count == packRequests, "no pack was requested")
        }
    }

    // MARK: Endless data

    @Test func catalogLargerThanTheLimitIsCutOff() async throws {
        let world = try await World.make()
        try await expectRefusal(.invalidCatalog, world: world, configure: { $0.maximumCatalogBytes = 64 << 10 }, tamper: { _ in
            var endless = try Data(contentsOf: world.catalogFile)
            endless.removeLast()  // the newline, then endless whitespace before the closing brace is gone
            endless.append(Data(repeating: 0x20, count: 4 << 20))
            try endless.write(to: world.catalogFile)
        })
    }

    @Test func manifestLongerThanItsPinIsCutOff() async throws {
        let world = try await World.make()
        try await expectRefusal(.integrity, world: world, tamper: { _ in
            try await world.publishNextVersion()
            let path = world.root.appending(path: "versions/2.json")
            var data = try Data(contentsOf: path)
            data.append(Data(repeating: 0x20, count: 4 << 20))
            try data.write(to: path)
        })
    }

    // MARK: Key compromise and rotation

    @Test func oneCompromisedKeyOfAThresholdOfTwoIsNotEnough() async throws {
        let second = try SigningKey(seed: Data((0..<32).map { UInt8(200 - $0) }))
        let world = try await World.make(keys: [try SigningKey(seed: Self.builderSeed), second])
        let attacker = SigningKey.generate()
        try await expectRefusal(.untrustedCatalog, world: world, trusting: [world.key.publicKey, second.publicKey], threshold: 2, tamper: { _ in
            try await world.publishNextVersion(signedBy: [world.key, attacker])
        })
    }

    @Test func rotationIsFollowedWithoutAnAppUpdateAndTheOldKeyIsThenRefused() async throws {
        let world = try await World.make()
        let next = SigningKey.generate()
        try await withTestServer(root: world.root) { server in
            let manager = try world.manager(url: server.baseURL)
            try await manager.prepare()

            try CatalogEditor(catalog: CatalogDirectory(root: world.root), signing: world.signing([next])).sign(rotatingFrom: [world.key])
            try await world.publishNextVersion(signedBy: [next])
            #expect(try await manager.checkForUpdates() == 2, "the app follows the rotation it was not built with")
            #expect(try manager.store.followedCatalog(url: server.baseURL)?.keySet?.keys == [next.publicKey])

            // The old key, compromised, signs a catalog without the rotation: refused, also after a restart.
            try world.editServedCatalog { index in
                index.keyRotations = nil
                index.serial += 5
                index = try index.signed(with: [world.key], expires: Date(timeIntervalSince1970: world.clock.now() + 86_400))
            }
            await #expect(throws: ResourceError.self) { try await manager.checkForUpdates() }
            let restarted = try world.manager(url: server.baseURL)
            do throws(ResourceError) {
                try await restarted.checkForUpdates()
                Issue.record("the rotated-away key was trusted again")
            } catch {
                #expect(error.code == .untrustedCatalog)
            }
        }
    }

    /// Trust is the store's, per catalog id: the same catalog reached through a second URL (a
    /// mirror, `127.0.0.1` for `localhost`) does not start again from the configured keys or serial.
    @Test func aSecondURLOfTheSameCatalogKeepsItsRotationAndSerial() async throws {
        let world = try await World.make()
        let next = SigningKey.generate()
        let copies = try TemporaryDirectory(prefix: "odr-catalog-copies")
        // The catalog before the rotation: signed by the old key, at a lower serial.
        try FileManager.default.copyItem(at: world.root, to: copies.appending("before"))
        try await withTestServer(root: world.root) { server in
            let manager = try world.manager(url: server.baseURL)
            try await manager.prepare()
            try CatalogEditor(catalog: CatalogDirectory(root: world.root), signing: world.signing([next])).sign(rotatingFrom: [world.key])
            try await world.publishNextVersion(signedBy: [next])
            #expect(try await manager.checkForUpdates() == 2)
            let current = try CatalogIndex.decode(from: Data(contentsOf: world.catalogFile))

            // The rotated catalog with a lower serial, re-signed by the new key; and the old key
            // signing a higher serial without the rotation.
            try FileManager.default.copyItem(at: world.root, to: copies.appending("older"))
            try FileManager.default.copyItem(at: world.root, to: copies.appending("forged"))
            let expires = Date(timeIntervalSince1970: world.clock.now() + 86_400)
            var older = current
            older.serial -= 1
            try older.signed(with: [next], expires: expires).encoded()
                .write(to: copies.appending("older").appending(path: CatalogIndex.fileName))
            var forged = current
            forged.keyRotations = nil
            forged.serial += 5
            try forged.signed(with: [world.key], expires: expires).encoded()
                .write(to: copies.appending("forged").appending(path: CatalogIndex.fileName))

            for (copy, codes) in [("before", [ResourceError.Code.untrustedCatalog, .catalogRollback]),
                                  ("forged", [.untrustedCatalog]), ("older", [.catalogRollback])] {
                try await withTestServer(root: copies.appending(copy)) { mirror in
                    let other = try world.manager(url: mirror.baseURL)
                    do throws(ResourceError) {
                        try await other.checkForUpdates()
                        Issue.record("the copy '\(copy)' was accepted through a second URL")
                    } catch {
                        #expect(codes.contains(error.code), "\(copy): \(error)")
                    }
                    #expect(try other.store.followedCatalog(url: mirror.baseURL) == nil, "\(copy): nothing stored for the second URL")
                }
            }
            #expect(try manager.store.followedCatalog(url: server.baseURL)?.highestSerial == current.serial)
            #expect(try manager.store.verify().isEmpty)
        }
    }

    @Test func aThresholdAboveTheNumberOfKeysIsRefusedWhenTheManagerOpens() async throws {
        let world = try await World.make()
        #expect { try world.manager(url: URL(string: "http://127.0.0.1:9/")!, threshold: 2) } throws: { error in
            let error = error as? ResourceError
            return error?.code == .invalidArgument && error?.message.contains("threshold") == true
        }
    }

    // MARK: Without keys

    @Test func withoutKeysAnyWellFormedCatalogIsAcceptedAsBefore() async throws {
        let world = try await World.make()
        try await withTestServer(root: world.root) { server in
            let manager = try world.manager(url: server.baseURL, trusting: [])
            try await manager.prepare()
            // Exactly what docs/SECURITY.md says is left open without keys: a changed catalog is taken.
            try world.editServedCatalog { $0.serial += 1 }
            #expect(try await manager.checkForUpdates() == 1)
            #expect(try manager.store.followedCatalog(url: server.baseURL)?.highestSerial == 2)
        }
    }
}
