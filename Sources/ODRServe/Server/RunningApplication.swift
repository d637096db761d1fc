import Hummingbird
import Logging
import NIOCore

/// One Hummingbird application listening on a port, run in its own task until stopped.
///
/// The catalog server stops and starts these as it goes offline and online; its port stays the same.
struct RunningApplication: Sendable {
    private let task: Task<Void, any Error>
    /// The port the listener is bound to.
    let port: Int

    /// Starts listening and returns once connections are accepted.
    static func start(host: String, port: Int, responder: CatalogResponder, logger: Logger) async throws(ServeError)
        -> RunningApplication
    {
        let (bound, reportBound) = AsyncStream<Int>.makeStream()
        let application = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "odrpack-serve"),
            onServerRunning: { channel in
                reportBound.yield(channel.localAddress?.port ?? port)
                reportBound.finish()
            },
            logger: logger
        )
        let task = Task {
            defer { reportBound.finish() }
            try await application.run()
        }
        var iterator = bound.makeAsyncIterator()
        if let port = await iterator.next() {
            return RunningApplication(task: task, port: port)
        }
        // The stream ended without a port: the application stopped before listening.
        let cause: (any Error)?
        do {
            try await task.value
            cause = nil
        } catch {
            cause = error
        }
        throw ServeError(.bindFailed, "Cannot listen on \(host):\(port): choose another host or port.", cause: cause)
    }

    /// Stops accepting connections, closes the open ones and waits until the port is released.
    func stop() async {
        task.cancel()
        _ = await task.result
    }
}
