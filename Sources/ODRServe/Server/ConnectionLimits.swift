import Hummingbird
import HummingbirdCore
import NIOCore
import ODRFormat

/// How many connections a server keeps open, and for how long an idle one: what a flood of
/// connections can take from the process that serves (file descriptors, memory), which for
/// `odr share` in a game is the game's own.
///
/// - Past ``maximumConnections`` the server stops accepting until one closes: the kernel holds
///   what arrives meanwhile in the listen backlog, and the process holds no more descriptors.
/// - Past ``OpenConnections/perAddress`` from one client address, a connection is closed as soon
///   as it is accepted, so one device cannot take every connection.
/// - A connection with no request under way for ``idleTimeout`` is closed, as is one that takes
///   that long to send a request's head.
struct ConnectionLimits: Sendable {
    let maximumConnections: Int
    let idleTimeout: Duration
    /// Where the connections are counted by address.
    let open: OpenConnections

    /// At least one connection, idle for 1 s to a day.
    init(maximumConnections: Int, perAddress: Int, idleSeconds: Int) {
        self.maximumConnections = max(1, maximumConnections)
        idleTimeout = .seconds(min(max(1, idleSeconds), 86_400))
        open = OpenConnections(perAddress: perAddress)
    }

    /// The HTTP server that keeps these limits.
    var server: HTTPServerBuilder {
        .http1(configuration: .init(additionalChannelHandlers: [ConnectionAdmission(connections: open)], idleTimeout: .init(idleTimeout)))
    }
}

/// The connections open from each client address, admitted up to a limit.
final class OpenConnections: Sendable {
    private struct State {
        var open = 0
        var byAddress: [String: Int] = [:]
        var refused = 0
    }
    let perAddress: Int
    private let state = Locked(State())

    init(perAddress: Int) {
        self.perAddress = max(1, perAddress)
    }

    /// Counts a connection from `address`; `false` (nothing counted) when that address already has
    /// ``perAddress`` open.
    func admit(_ address: String) -> Bool {
        state.withLock { state in
            guard state.byAddress[address, default: 0] < perAddress else {
                state.refused += 1
                return false
            }
            state.open += 1
            state.byAddress[address, default: 0] += 1
            return true
        }
    }

    /// Uncounts an admitted connection from `address` once it closed.
    func release(_ address: String) {
        state.withLock { state in
            state.open -= 1
            let left = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Connections admitted and not closed yet.
    var open: Int { state.withLock { $0.open } }

    /// Connections closed at once because their address had too many open.
    var refused: Int { state.withLock { $0.refused } }
}

/// Admits a new connection under ``OpenConnections``' limit per address, or closes it. It passes
/// all traffic on unchanged (NIO wants a handler to be inbound or outbound): it only counts the
/// connection while it is open.
final class ConnectionAdmission: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny
    let connections: OpenConnections

    init(connections: OpenConnections) {
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let address = channel.remoteAddress?.ipAddress ?? "?"
        guard connections.admit(address) else {
            // After the pipeline is complete, so the server sees a connection that ended.
            context.eventLoop.execute { channel.close(promise: nil) }
            return
        }
        let connections = connections
        channel.closeFuture.whenComplete { _ in connections.release(address) }
    }
}
