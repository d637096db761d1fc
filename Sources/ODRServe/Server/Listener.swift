import Hummingbird
import Logging

/// Whether the server's port accepts connections, and the switch between online and offline.
///
/// An actor so that going offline, coming back and stopping happen one at a time.
actor Listener {
    private enum State {
        case listening(RunningApplication)
        /// Not listening; the reservation holds the port unless another program took it meanwhile.
        case offline(PortReservation?)
        case stopped
    }

    private var state: State
    private let host: String
    /// Starts the application on the listener's host and port.
    private let startApplication: @Sendable (String, Int, Logger) async throws(ServeError) -> RunningApplication
    private let logger: Logger
    /// The port, fixed for the server's lifetime.
    nonisolated let port: Int

    /// Starts listening on `host` and `port` (0 picks a free port), or only reserves the port
    /// when starting offline; `connections` as in ``RunningApplication/start(host:port:responder:logger:serverName:connections:)``.
    init<Responder: HTTPResponder>(
        host: String, port: Int, offline: Bool, responder: Responder, logger: Logger, serverName: String = "odrpack-serve",
        connections: ConnectionLimits? = nil
    ) async throws(ServeError) where Responder.Context == ServeContext {
        self.host = host
        startApplication = { host, port, logger throws(ServeError) in
            try await RunningApplication.start(host: host, port: port, responder: responder, logger: logger, serverName: serverName,
                                               connections: connections)
        }
        self.logger = logger
        if offline {
            let reservation = try PortReservation(host: host, port: port)
            self.port = reservation.port
            state = .offline(reservation)
        } else {
            let application = try await startApplication(host, port, logger)
            self.port = application.port
            state = .listening(application)
        }
    }

    /// Goes offline (refusing connections, dropping open ones) or comes back online.
    ///
    /// The actor is reentrant across the awaits below, so each step checks that no other call
    /// (a concurrent `stop`) changed the state meanwhile.
    func setOffline(_ offline: Bool) async throws(ServeError) {
        switch (state, offline) {
        case (.listening(let application), true):
            state = .offline(nil)
            await application.stop()
            guard case .offline = state else { return }
            // Another program may take the port in the instant it is free; the server then stays
            // offline (connections are still refused) and reports why.
            let reservation: PortReservation
            do {
                reservation = try PortReservation(host: host, port: port)
            } catch {
                logger.warning("Offline without holding port \(port): \(error)")
                throw error
            }
            state = .offline(reservation)
        case (.offline(let reservation), false):
            // Bind while the reservation still holds the port (both use SO_REUSEADDR), then release it.
            let application = try await startApplication(host, port, logger)
            guard case .offline = state else {
                await application.stop()
                throw ServeError(.stopped, "The server was stopped: start a new one.")
            }
            withExtendedLifetime(reservation) {}
            state = .listening(application)
        case (.stopped, _):
            throw ServeError(.stopped, "The server was stopped: start a new one.")
        case (.listening, false), (.offline, true):
            break
        }
    }

    /// Closes the port for good.
    func stop() async {
        let previous = state
        state = .stopped
        if case .listening(let application) = previous {
            await application.stop(graceful: true)
        }
    }
}
