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
        // `running` is only read and written with `condition` locked.
        let condition = ConditionLock()
        var running = 0
    }

    /// Runs `body` on a new thread named `name` (at most 15 bytes show), counted until it returns.
    static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        counter.condition.lock()
        counter.running += 1
        counter.condition.unlock()
        let work = Work {
            // The kernel's name for the thread (what `ps -T` and /proc show).
            try? Data(name.utf8.prefix(15)).write(to: URL(filePath: "/proc/thread-self/comm"))
            body()
            counter.condition.lock()
            counter.running -= 1
            counter.condition.broadcast()
            counter.condition.unlock()
        }
        // A plain detached pthread (Foundation's `Thread` is not in FoundationEssentials) with the
        // default attributes (glibc's default stack size, from the stack limit).
        let context = Unmanaged.passRetained(work).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
            work.body()
            return nil
        }, context)
        if status == 0 {
            pthread_detach(thread)
        } else {
            // No thread to be had (EAGAIN: the process is at its thread limit): the work still runs,
            // on a libdispatch worker, and is still counted until it returns.
            let work = Unmanaged<Work>.fromOpaque(context).takeRetainedValue()
            DispatchQueue.global().async { work.body() }
        }
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

    /// Waits until none of the runtime's threads runs, at most until `deadline` (`nil`: no limit).
    ///
    /// - Returns: whether none runs.
    public static func waitUntilStopped(until deadline: Date?) -> Bool {
        counter.condition.lock()
        defer { counter.condition.unlock() }
        while counter.running > 0 {
            if let deadline {
                guard counter.condition.wait(until: deadline) else { return counter.running == 0 }
            } else {
                counter.condition.wait()
            }
        }
        return true
    }
}
