import Dispatch
import Foundation
import ODRFormat

/// SIGINT and SIGTERM as an async event, so a tool that serves (`odrpack serve`, `odr share`)
/// shuts down cleanly instead of dying: it stops accepting, lets responses under way end for at
/// most a second and exits with status 0.
///
/// Create it before the server starts, so a signal during startup is not lost; while it is alive,
/// a second signal exits at once (status 128 + the signal's number), for a shutdown that hangs.
/// The signals' dispositions are set here, so a tool started with SIGINT ignored (a background job
/// of a non-interactive shell) stops on it all the same.
///
/// ```swift
/// let signals = TerminationSignals(label: "odr.share.signals")
/// let server = try await ShareServer.start(source: source)
/// _ = await signals.next()
/// await server.stop()
/// withExtendedLifetime(signals) {}
/// ```
public final class TerminationSignals: @unchecked Sendable {
    // Unchecked: `sources` is set once and never touched again (it only keeps the sources alive),
    // and `signals` is an AsyncStream, which is Sendable.
    private let sources: [any DispatchSourceSignal]
    private let signals: AsyncStream<Int32>

    /// Starts listening for SIGINT and SIGTERM; `label` names the queue that receives them.
    public init(label: String) {
        let queue = DispatchQueue(label: label)
        let (signals, continuation) = AsyncStream<Int32>.makeStream()
        let received = Locked(0)
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)  // Dispatch only sees a signal whose default action is off.
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let count = received.withLock { count in
                    count += 1
                    return count
                }
                if count > 1 { exit(128 + number) }
                continuation.yield(number)
            }
            source.resume()
            return source
        }
        self.signals = signals
    }

    /// The first SIGINT or SIGTERM received.
    public func next() async -> Int32 {
        var iterator = signals.makeAsyncIterator()
        return await iterator.next() ?? SIGTERM
    }
}
