#if canImport(Glibc)
import Glibc
#endif
import Foundation
import CSQLite
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// A `storage-failure` names its cause (read-only, locked, damaged, an I/O error) with the way out
/// that fits it, and a read-only database still serves installed tags (docs/STORE.md, "When the
/// database cannot be written").
struct StoreFailureTests {
    @Test func eachDatabaseFailureNamesItsCauseAndItsWayOut() {
        let directory = URL(filePath: "/nonexistent-odr-store")
        func message(_ code: Int32, _ text: String) -> ResourceError {
            StoreFailure.database("record a use", SQLiteError(extendedResultCode: code, message: text), directory: directory)
        }
        let locked = message(SQLITE_BUSY, "database is locked")
        #expect(locked.code == .storageFailure)
        #expect(locked.message.contains("locked for over 30 seconds") && locked.message.contains("SQLite: database is locked"), "\(locked.message)")
        let readOnly = message(SQLITE_READONLY, "attempt to write a readonly database")
        #expect(readOnly.message.contains("read-only") && readOnly.message.contains("/nonexistent-odr-store/store.sqlite"), "\(readOnly.message)")
        #expect(!readOnly.message.contains("wait for it"))
        let corrupt = message(SQLITE_NOTADB, "file is not a database")
        #expect(corrupt.message.contains("damaged") && corrupt.message.contains("aside"), "\(corrupt.message)")
        let io = message(SQLITE_IOERR, "disk I/O error")
        #expect(io.message.contains("I/O error"), "\(io.message)")
        #expect(message(SQLITE_FULL, "database or disk is full").code == .outOfSpace)
    }

    /// A database file that is not a database: the store does not open, and says the file is damaged.
    @Test func aDamagedDatabaseFileIsNamedDamaged() throws {
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try Data(repeating: 0x41, count: 8192).write(to: directory.appending(ResourceStore.databaseName))
        #expect {
            _ = try ResourceStore(directory: directory.url)
        } throws: { error in
            let error = error as? ResourceError
            return error?.code == .storageFailure && error?.message.contains("damaged") == true
        }
    }

    /// Runs odr as a user who cannot write a read-only file: root keeps its `CAP_DAC_OVERRIDE`
    /// out of the child (setpriv), anyone else runs it as is.
    static func runWithoutOverride(_ arguments: [String]) async throws -> CommandResult {
        let odr = try #require(ODRExecutable.url).path
        guard getuid() == 0 else { return try await runCommandOffPool(odr, arguments) }
        return try await runCommandOffPool("setpriv", dropCapabilities + [odr] + arguments)
    }

    static let dropCapabilities = ["--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]

    /// Whether a read-only file stops this test's children from writing it.
    static let canMakeReadOnly: Bool = {
        guard ODRExecutable.url != nil else { return false }
        return getuid() != 0 || ((try? runCommand("setpriv", dropCapabilities + ["true"]))?.status == 0)
    }()

    @Test(.enabled(if: canMakeReadOnly, "needs odr, and setpriv when run as root"))
    func aReadOnlyDatabaseStillServesInstalledTagsAndNamesItselfOnWrites() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let store = directory.appending("store").path
        let common = ["--catalog", fixture.catalog.path, "--store", store]
        let fetched = try await ODRExecutable.run(["fetch", "--quiet"] + common + ["small"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        let database = directory.appending("store/\(ResourceStore.databaseName)").path
        let before = try Data(contentsOf: URL(filePath: database))
        #expect(chmod(database, 0o444) == 0)
        defer { chmod(database, 0o644) }

        // The catalog is checked online, found unchanged, and the installed tag is used.
        let fetch = try await Self.runWithoutOverride(["fetch"] + common + ["small"])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(fetch.stdout.contains("Installed 0 pack(s)"), "\(fetch.stdout)")
        let path = try await Self.runWithoutOverride(["path"] + common + ["--offline", "small/notes.txt"])
        #expect(path.status == 0, "\(path.stderr)")
        #expect(try Data(contentsOf: URL(filePath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
                == fixture.contents(of: "small/notes.txt"))
        let status = try await Self.runWithoutOverride(["status"] + common + ["--offline"])
        #expect(status.status == 0, "\(status.stderr)")
        let verify = try await Self.runWithoutOverride(["verify", "--store", store])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")

        // A write fails, naming the read-only file and what to do, not a lock race.
        let install = try await Self.runWithoutOverride(["fetch"] + common + ["big"])
        #expect(install.status != 0)
        #expect(install.stderr.contains("error[storage-failure]") && install.stderr.contains("read-only")
                && install.stderr.contains(database) && !install.stderr.contains("wait for it"), "\(install.stderr)")
        let purge = try await Self.runWithoutOverride(["purge", "--bytes", "1000000"] + common + ["--offline"])
        #expect(purge.status != 0)
        #expect(purge.stderr.contains("read-only"), "\(purge.stderr)")
        #expect(try Data(contentsOf: URL(filePath: database)) == before, "nothing was written")
    }
}

extension StoreFailureTests {
    /// SQLite's extended result codes count as their primary code: an extended I/O error is an I/O
    /// error, a stale snapshot a lock, a moved database read-only, a damaged index a damaged file.
    @Test func anExtendedResultCodeIsClassifiedByItsPrimaryCode() {
        // No directory: an I/O error of a directory this process may not write counts as read-only.
        func kind(_ code: Int32) -> StoreFailure.DatabaseTrouble {
            StoreFailure.kind(of: SQLiteError(extendedResultCode: code), directory: nil)
        }
        #expect(kind(ExtendedCode.ioErrorShortRead) == .ioError)
        #expect(kind(ExtendedCode.ioErrorFsync) == .ioError)
        #expect(kind(ExtendedCode.busySnapshot) == .locked)
        #expect(kind(ExtendedCode.lockedSharedCache) == .locked)
        #expect(kind(ExtendedCode.readOnlyDatabaseMoved) == .readOnly(path: "store.sqlite"))
        #expect(kind(ExtendedCode.corruptIndex) == .corrupt(path: "store.sqlite"))
        #expect(kind(ExtendedCode.constraintPrimaryKey) == .other)
        let full = StoreFailure.database("record a use", SQLiteError(extendedResultCode: SQLITE_FULL, message: "database or disk is full"))
        #expect(full.code == .outOfSpace)
        let short = StoreFailure.database("record a use", SQLiteError(extendedResultCode: ExtendedCode.ioErrorShortRead))
        #expect(short.code == .storageFailure && short.message.contains("I/O error"), "\(short.message)")
    }
}
