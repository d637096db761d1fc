import ArgumentParser
import ODRCommandLine
import Dispatch
import Foundation
import Logging
import ODRServe
import ODRFormat

/// `odrpack serve CATALOG`: a development server for a catalog, with a network conditioner.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a catalog directory over HTTP for development, optionally over a bad network.",
        discussion: """
            Serves every file below CATALOG with byte ranges, ETag, Last-Modified, conditional \
            requests and cache headers (no-cache for catalog.json, immutable for everything else). \
            The URL is printed on stdout once the server listens; each request is logged on stderr. \
            Stop with Ctrl-C (SIGINT) or SIGTERM.

            The conditioner options imitate a bad network. Random decisions are drawn from --seed, so \
            a run with the same seed and the same requests fails the same way; without --seed a seed \
            is chosen and logged.

            Examples:
              odrpack serve out/catalog                          # http://127.0.0.1:8080/
              odrpack serve out/catalog --port 0                 # any free port; read the URL from stdout
              odrpack serve out/catalog --latency 200 --rate 256k
              odrpack serve out/catalog --fail-rate 0.2 --truncate-rate 0.1 --seed 42
              odrpack serve out/catalog --offline                # connections are refused
            See docs/SERVE.md.
            """
    )

    @Argument(help: ArgumentHelp("The catalog directory to serve (any directory of static files).", valueName: "catalog"))
    var catalog: String

    @Option(help: "Address to listen on. Loopback by default; 0.0.0.0 serves other machines too, e.g. --host 0.0.0.0.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (the URL on stdout tells which), e.g. --port 0.")
    var port = 8080

    @Option(help: ArgumentHelp("Delay before each response, in milliseconds, e.g. --latency 150.", valueName: "ms"))
    var latency = 0

    @Option(
        help: ArgumentHelp(
            "Body bytes per second for each connection, as a byte size (1048576, 100MB, 100 MiB, 256k), e.g. --rate 256k.",
            valueName: "bytes-per-second"
        ),
        transform: ByteSizeArgument.intBytes
    )
    var rate: Int?

    @Option(help: ArgumentHelp("Probability (0 to 1) of answering 503 Service Unavailable, e.g. --fail-rate 0.1.", valueName: "p"))
    var failRate = 0.0

    @Option(
        help: ArgumentHelp(
            "Probability (0 to 1) of closing the connection part way through a body, e.g. --truncate-rate 0.05.",
            valueName: "p"
        )
    )
    var truncateRate = 0.0

    @Option(help: ArgumentHelp("Probability (0 to 1) of flipping a byte of a body, e.g. --corrupt-rate 0.01.", valueName: "p"))
    var corruptRate = 0.0

    @Flag(help: "Refuse every connection, as if the network were down (the port stays reserved).")
    var offline = false

    @Option(help: ArgumentHelp("Seed of every random decision, to replay a run, e.g. --seed 42.", valueName: "n"))
    var seed: UInt64?

    @Option(help: ArgumentHelp("Least severe log messages shown on stderr: trace, debug, info, notice, warning, error.", valueName: "level"))
    var logLevel: Logger.Level = .info

    func validate() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: catalog, isDirectory: &isDirectory) else {
            throw ValidationError("The catalog directory \(catalog) does not exist: pass the directory `odrpack build` wrote.")
        }
        guard isDirectory.boolValue else {
            throw ValidationError("\(catalog) is not a directory: pass a catalog directory.")
        }
        guard (0...65535).contains(port) else {
            throw ValidationError("--port \(port) is not a TCP port: use 0 (any free port) to 65535.")
        }
        guard latency >= 0 else {
            throw ValidationError("--latency \(latency) is negative: use 0 or more milliseconds.")
        }
        do {
            try conditions(seed: 0).validate()
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "odrpack.serve")
        let signals = TerminationSignals(label: "odrpack.serve.signals")
        let conditions = conditions(seed: seed ?? UInt64.random(in: .min ... .max))
        let server = try await CatalogServer.start(
            root: URL(filePath: catalog, directoryHint: .isDirectory),
            host: host,
            port: port,
            conditions: conditions,
            logger: logger
        )
        // Written straight to the descriptor: `print` would sit in stdout's buffer when piped to a script.
        FileHandle.standardOutput.write(Data((server.baseURL.absoluteString + "\n").utf8))

        let signal = await signals.next()
        logger.notice("Received \(signal == SIGINT ? "SIGINT" : "SIGTERM"), stopping (send it again to exit at once)")
        await server.stop()
        withExtendedLifetime(signals) {}
    }

    private func conditions(seed: UInt64) -> NetworkConditions {
        NetworkConditions(
            latency: .milliseconds(latency),
            bytesPerSecond: rate,
            failRate: failRate,
            truncateRate: truncateRate,
            corruptRate: corruptRate,
            offline: offline,
            seed: seed
        )
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
