import ODRFormat
internal import CCurl

/// Commands for the transfer loop, posted from any thread; posting wakes the loop's poll.
final class TransferInbox: Sendable {
    enum Command {
        case add(TransferOperation)
        /// Priority, pause, cancellation or buffer space of the transfer changed.
        case changed(TransferOperation)
        case shutdown
    }

    private struct State {
        var commands: [Command] = []
        /// Present while the loop's multi handle exists; cleared before it is freed.
        var wakeup: CurlWakeup?
        var closed = false
    }

    private let state = Locked(State())

    /// Posts a command; after ``close()`` only `.add` matters, and it fails the transfer at once.
    func post(_ command: Command) {
        let rejected = state.withLock { state -> TransferOperation? in
            if state.closed {
                if case .add(let operation) = command { return operation }
                return nil
            }
            state.commands.append(command)
            state.wakeup?.wake()
            return nil
        }
        rejected?.deliver(.failed(ResourceError(.cancelled, "The transfer engine was shut down; create a new one.",
                                                url: rejected?.request.url)))
    }

    /// Takes every pending command, oldest first.
    func take() -> [Command] {
        state.withLock { state in
            defer { state.commands.removeAll(keepingCapacity: true) }
            return state.commands
        }
    }

    /// Connects the loop's multi handle so posts wake its poll.
    func open(_ wakeup: CurlWakeup) {
        state.withLock { $0.wakeup = wakeup }
    }

    /// Stops accepting commands; returns what was still pending so the loop can fail it.
    func close() -> [Command] {
        state.withLock { state in
            state.closed = true
            state.wakeup = nil
            defer { state.commands.removeAll() }
            return state.commands
        }
    }
}

/// Lets any thread interrupt the loop's `curl_multi_poll`.
///
/// `@unchecked Sendable`: it only calls `curl_multi_wakeup`, which libcurl documents as safe from any
/// thread, and only while ``TransferInbox`` holds it, which it stops doing (under its lock) before
/// the loop frees the multi handle.
final class CurlWakeup: @unchecked Sendable {
    private let multi: UnsafeMutableRawPointer

    init(_ multi: CurlMulti) {
        self.multi = multi.handle
    }

    func wake() {
        // A lost wakeup only delays the loop until its next poll timeout.
        _ = curl_multi_wakeup(multi)
    }
}
