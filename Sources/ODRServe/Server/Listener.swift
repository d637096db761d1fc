import Logging

/// Whether the server's port accepts connections, and the switch between online and offline.
///
/// An actor so that going offline, coming back and stopping happen one at a time.
actor Listener {
    private enum State {
        case listening(RunningApplication)
        case offline(PortReservation)
        case stopped
    }

    private var state: State
    private let host: String
    private let responder: CatalogResponder
    private let logger: Logger
    /// The port, fixed for the server's lifetime.
    nonisolated let port: Int

    /// Starts listening on `host` and `port` (0 picks a free port), or only reserves the port
    /// when starting offline.
    init(host: String, port: Int, offline: Bool, responder: CatalogResponder, logger: Logger) async throws(ServeError) {
        self.host = host
        self.responder = responder
        self.logger = logger
        if offline {
            let reservation = try PortReservation(host: host, port: port)
            self.port = reservation.port
            state = .offline(reservation)
        } else {
            let application = try await RunningApplication.start(host: host, port: port, responder: responder, logger: logger)
            self.port = application.port
            state = .listening(application)
        }
    }

    /// Goes offline (refusing connections, dropping open ones) or comes back online.
    func setOffline(_ offline: Bool) async throws(ServeError) {
        switch (state, offline) {
        case (.listening(let application), true):
            await application.stop()
            state = .offline(try PortReservation(host: host, port: port))
        case (.offline(let reservation), false):
            // Bind while the reservation still holds the port (both use SO_REUSEADDR), then release it.
            let application = try await RunningApplication.start(host: host, port: port, responder: responder, logger: logger)
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
        if case .listening(let application) = state {
            await application.stop()
        }
        state = .stopped
    }
}
