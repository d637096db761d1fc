import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// One Hummingbird application listening on a port, run in its own task until stopped.
///
/// The catalog server stops and starts these as it goes offline and online; its port stays the same.
struct RunningApplication: Sendable {
    private let task: Task<Void, any Error>
    /// Runs the application, so that closing for good can shut it down gracefully.
    private let group: ServiceGroup
    /// The port the listener is bound to.
    let port: Int

    /// Starts listening and returns once connections are accepted.
    ///
    /// - Parameter connections: the limits on open connections and where they are counted; `nil`
    ///   for none (`odrpack serve`, a development server).
    static func start<Responder: HTTPResponder>(
        host: String, port: Int, responder: Responder, logger: Logger, serverName: String = "odrpack-serve",
        connections: ConnectionLimits? = nil
    ) async throws(ServeError) -> RunningApplication where Responder.Context == ServeContext {
        let (bound, reportBound) = AsyncStream<Int>.makeStream()
        let application = Application(
            responder: responder,
            server: connections?.server ?? .http1(),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: serverName,
                availableConnectionsDelegate: connections.map { MaximumAvailableConnections($0.maximumConnections, logger: logger) }
            ),
            onServerRunning: { channel in
                reportBound.yield(channel.localAddress?.port ?? port)
                reportBound.finish()
            },
            logger: logger
        )
        var configuration = ServiceGroupConfiguration(services: [.init(service: application)], logger: logger)
        // A response that never ends (a stalled fault) would hold a graceful shutdown forever.
        configuration.maximumGracefulShutdownDuration = .seconds(1)
        let group = ServiceGroup(configuration: configuration)
        let task = Task {
            defer { reportBound.finish() }
            try await group.run()
        }
        var iterator = bound.makeAsyncIterator()
        if let port = await iterator.next() {
            return RunningApplication(task: task, group: group, port: port)
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
    ///
    /// - Parameter graceful: finish the responses under way (for at most a second) rather than cut
    ///   them. Cancelling outright can trap in NIO ("Deinited NIOAsyncWriter without calling
    ///   finish()") when a connection was accepted but not yet handed to the application, so closing
    ///   for good is graceful; going offline cuts responses on purpose, as a network would.
    func stop(graceful: Bool = false) async {
        if graceful {
            await group.triggerGracefulShutdown()
        } else {
            task.cancel()
        }
        _ = await task.result
    }
}
