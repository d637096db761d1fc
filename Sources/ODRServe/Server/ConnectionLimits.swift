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
/// - Past the slots of one client address (``AddressSlots/perAddress``), a connection is closed as soon
///   as it is accepted, so one device cannot take every connection.
/// - A connection with no request under way for ``idleTimeout`` is closed, as is one that takes
///   that long to send a request's head.
struct ConnectionLimits: Sendable {
    let maximumConnections: Int
    let idleTimeout: Duration
    /// The open connections, counted by address.
    let open: AddressSlots

    /// At least one connection, idle for 1 s to a day.
    init(maximumConnections: Int, perAddress: Int, idleSeconds: Int) {
        self.maximumConnections = max(1, maximumConnections)
        idleTimeout = .seconds(min(max(1, idleSeconds), 86_400))
        // The total is kept by not accepting (Hummingbird's `MaximumAvailableConnections`), so
        // these slots never refuse for it.
        open = AddressSlots(total: Int.max, perAddress: perAddress)
    }

    /// The HTTP server that keeps these limits.
    var server: HTTPServerBuilder {
        .http1(configuration: .init(additionalChannelHandlers: [ConnectionAdmission(connections: open)], idleTimeout: .init(idleTimeout)))
    }
}

/// Admits a new connection under the limit of slots per address, or closes it. It passes all
/// traffic on unchanged (NIO wants a handler to be inbound or outbound): it only holds the
/// connection's slot while it is open.
final class ConnectionAdmission: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny
    let connections: AddressSlots

    init(connections: AddressSlots) {
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let address = channel.remoteAddress?.ipAddress ?? "?"
        guard let slot = connections.acquire(address: address) else {
            // After the pipeline is complete, so the server sees a connection that ended.
            context.eventLoop.execute { channel.close(promise: nil) }
            return
        }
        channel.closeFuture.whenComplete { _ in withExtendedLifetime(slot) {} }
    }
}
