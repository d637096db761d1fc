#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The threads the runtime starts itself (each ``TransferEngine``'s transfer thread, network
/// probes), counted so that a host can wait until they have stopped (the C API's `odr_shutdown`).
/// Work that runs on Swift's concurrency pool or on libdispatch queues is not counted: those
/// threads belong to the process's libdispatch, which parks and ends them by itself.
public enum RuntimeThreads {
    private static let counter = Counter()

    private final class Counter: @unchecked Sendable {
        // `running` and `ended` are only read and written with `condition` locked.
        let condition = ConditionLock()
        var running = 0
        /// Threads whose work has returned and that are about to exit, not yet joined.
        var ended: [pthread_t] = []
    }

    /// Runs `body` on a new thread named `name` (at most 15 bytes show), counted until it returns.
    static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        counter.condition.lock()
        counter.running += 1
        // Threads are joinable so that ``waitUntilStopped(until:)`` returns only once they have
        // exited; those that ended since the last call are joined here, so none lingers unjoined.
        let ended = counter.ended
        counter.ended = []
        counter.condition.unlock()
        join(ended)
        let work = Work {
            // The kernel's name for the thread (what `ps -T` and /proc show).
            try? Data(name.utf8.prefix(15)).write(to: URL(filePath: "/proc/thread-self/comm"))
            body()
        }
        // A plain pthread (Foundation's `Thread` is not in FoundationEssentials) with the default
        // attributes (glibc's default stack size, from the stack limit).
        let context = Unmanaged.passRetained(work).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            var work: Work? = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
            work?.body()
            // What the work captured is released here, before the thread counts as ended, so that
            // the little left to run once it does touches nothing of the caller's.
            work = nil
            RuntimeThreads.ended(thread: pthread_self())
            return nil
        }, context)
        if status != 0 {
            // No thread to be had (EAGAIN: the process is at its thread limit): the work still runs,
            // on a libdispatch worker (never joined: it is not ours), and is still counted until it returns.
            let work = Unmanaged<Work>.fromOpaque(context).takeRetainedValue()
            DispatchQueue.global().async {
                work.body()
                RuntimeThreads.ended(thread: nil)
            }
        }
    }

    /// Counts a started thread's work as returned; `thread`, when it is one of ours, is joined by
    /// the next ``start(name:_:)`` or ``waitUntilStopped(until:)``.
    private static func ended(thread: pthread_t?) {
        counter.condition.lock()
        counter.running -= 1
        if let thread { counter.ended.append(thread) }
        counter.condition.broadcast()
        counter.condition.unlock()
    }

    /// Waits for `threads`, whose work has returned, to exit.
    private static func join(_ threads: [pthread_t]) {
        for thread in threads { pthread_join(thread, nil) }
    }

    /// What a started thread runs, passed through `pthread_create`'s context pointer.
    private final class Work: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// How many of the runtime's threads run now.
    public static var running: Int {
        counter.condition.lock()
        defer { counter.condition.unlock() }
        return counter.running
    }

    /// Waits until none of the runtime's threads runs, at most until `deadline` (`nil`: no limit):
    /// their work has returned and the threads themselves have exited, so no code of the library
    /// runs on them any more.
    ///
    /// - Returns: whether none runs.
    public static func waitUntilStopped(until deadline: Date?) -> Bool {
        counter.condition.lock()
        while counter.running > 0 {
            if let deadline {
                guard counter.condition.wait(until: deadline) else { break }
            } else {
                counter.condition.wait()
            }
        }
        let stopped = counter.running == 0
        let ended = counter.ended
        counter.ended = []
        counter.condition.unlock()
        join(ended)
        return stopped
    }
}
