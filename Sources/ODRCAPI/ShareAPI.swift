import CODR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat
import ODRRuntime
#if Sharing
import Logging
import ODRServe

/// What an `odr_share` holds: the share server of a manager's store, in this process.
///
/// The handle keeps its manager alive (as requests and hints do), so the share may outlive the
/// caller's `odr_manager_destroy`; `odr_share_stop` stops it once, `odr_share_destroy` frees it.
final class ShareHandle: Sendable {
    let manager: ResourceManager
    let server: ShareServer
    /// Set by the first `odr_share_stop` (or `odr_share_destroy`): later calls find it stopped.
    let stopped = Locked(false)

    init(manager: ResourceManager, server: ShareServer) {
        self.manager = manager
        self.server = server
    }

    /// The server, or `share-stopped` when `odr_share_stop` was called.
    func running(_ function: String) throws(ResourceError) -> ShareServer {
        guard !stopped.withLock({ $0 }) else {
            throw ResourceError(CStatus.shareStopped, "\(function): the share was stopped with odr_share_stop. Start a new one with odr_manager_start_sharing, and free this one with odr_share_destroy.")
        }
        return server
    }

    /// Stops the server if nobody did yet, blocking until the port is closed; `false` when it
    /// was already stopped.
    func stopOnce() -> Bool {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return false }
        let server = self.server
        try? runBlocking(deadline: nil, awaitCancellation: true) { await server.stop() }
        return true
    }

    /// The limits and the rest of the settings an `odr_share_options` holds (NULL: the defaults),
    /// or `invalid-argument` naming the field that is out of range.
    static func settings(_ pointer: UnsafePointer<odr_share_options>?) throws(ResourceError)
        -> (host: String, port: Int, limits: ShareLimits, announce: Bool)
    {
        guard let options = pointer?.pointee else { return ("127.0.0.1", ShareServer.defaultPort, ShareLimits(), false) }
        guard (1...UInt32(ODR_SHARE_OPTIONS_VERSION)).contains(options.version) else {
            throw invalidArgument("The share options' version is \(options.version); initialize them with ODR_SHARE_OPTIONS_INIT (version \(ODR_SHARE_OPTIONS_VERSION)), or pass NULL for the defaults.")
        }
        let host = try options.host.map { p throws(ResourceError) in try CInput.nonEmptyString(p, "The share's host (odr_share_options.host)") } ?? "127.0.0.1"
        guard (0...65535).contains(options.port) else {
            throw invalidArgument("odr_share_options.port must be 0 (any free port) to 65535; \(options.port) is not a TCP port.")
        }
        guard (1...maximumTransfers).contains(options.max_transfers) else {
            throw invalidArgument("odr_share_options.max_transfers must be 1 to \(maximumTransfers) bodies at once; \(options.max_transfers) is not.")
        }
        guard (1...maximumTransfers).contains(options.max_transfers_per_address) else {
            throw invalidArgument("odr_share_options.max_transfers_per_address must be 1 to \(maximumTransfers); \(options.max_transfers_per_address) is not.")
        }
        guard options.bytes_per_second == -1 || options.bytes_per_second > 0 else {
            throw invalidArgument("odr_share_options.bytes_per_second must be -1 (no limit) or a positive byte rate; \(options.bytes_per_second) would send nothing.")
        }
        guard options.announce == 0 || options.announce == 1 else {
            throw invalidArgument("odr_share_options.announce must be 0 or 1; \(options.announce) is neither.")
        }
        let limits = ShareLimits(maximumConcurrentTransfers: Int(options.max_transfers),
                                 maximumTransfersPerAddress: Int(options.max_transfers_per_address),
                                 bytesPerSecond: options.bytes_per_second < 0 ? nil : CInput.bytes(options.bytes_per_second))
        return (host, Int(options.port), limits, options.announce == 1)
    }

    /// The most transfers at once a share takes (each holds a connection and a file open).
    static let maximumTransfers: Int32 = 1024

    /// A share server's error as the C API reports it.
    static func resourceError(_ error: ServeError) -> ResourceError {
        switch error.code {
        case .bindFailed: ResourceError(CStatus.bindFailed, error.message, cause: error)
        case .announceFailed: ResourceError(.networkUnavailable, error.message, cause: error)
        case .stopped: ResourceError(CStatus.shareStopped, error.message, cause: error)
        default: ResourceError(.init(rawValue: error.code.rawValue), error.message, cause: error)
        }
    }
}

/// `odr_manager_start_sharing`: Shares the manager's store with peers, in this process. Documented in odr.h.
@_cdecl("odr_manager_start_sharing")
public func odrManagerStartSharing(
    _ handle: OpaquePointer?, _ options: UnsafePointer<odr_share_options>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let out = try CInput.out(out, "out_share")
        let settings = try ShareHandle.settings(options)
        // The library prints nothing: a game's standard output is its own.
        let logger = Logger(label: "odr.share") { _ in SwiftLogNoOpLogHandler() }
        let started = Locked<ShareServer?>(nil)
        try runBlocking(deadline: nil, awaitCancellation: true) { () throws(ResourceError) in
            do throws(ServeError) {
                let server = try await manager.startSharing(host: settings.host, port: settings.port, limits: settings.limits,
                                                            announce: settings.announce, logger: logger)
                started.withLock { $0 = server }
            } catch {
                throw ShareHandle.resourceError(error)
            }
        }
        guard let server = started.withLock({ $0 }) else {
            throw ResourceError(CStatus.bindFailed, "The share did not start; call odr_manager_start_sharing again.")
        }
        out.pointee = CHandle.make(ShareHandle(manager: manager, server: server))
        LiveHandles.shareCreated()
    }
}

/// `odr_share_port`: The TCP port the share listens on. Documented in odr.h.
@_cdecl("odr_share_port")
public func odrSharePort(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let share = try CHandle.object(handle, as: ShareHandle.self, "share")
        let out = try CInput.out(out, "out_port")
        out.pointee = Int32(try share.running("odr_share_port").port)
    }
}

/// `odr_share_url`: The share's URL, http://host:port/, copied into the caller's buffer. Documented in odr.h.
@_cdecl("odr_share_url")
public func odrShareURL(
    _ handle: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ needed: UnsafeMutablePointer<Int>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let share = try CHandle.object(handle, as: ShareHandle.self, "share")
        let url = try share.running("odr_share_url").baseURL.absoluteString
        try CInput.copy(url, into: buffer, size: size, needed: needed, what: "The share's URL")
    }
}

/// `odr_share_stats`: Body bytes sent since the start and transfers under way. Documented in odr.h.
@_cdecl("odr_share_stats")
public func odrShareStats(
    _ handle: OpaquePointer?, _ bytesSent: UnsafeMutablePointer<Int64>?, _ active: UnsafeMutablePointer<Int32>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let share = try CHandle.object(handle, as: ShareHandle.self, "share")
        bytesSent?.pointee = share.server.bytesSent
        active?.pointee = Int32(clamping: share.server.activeTransfers)
    }
}

/// `odr_share_stop`: Stops listening and closes every connection. Documented in odr.h.
@_cdecl("odr_share_stop")
public func odrShareStop(_ handle: OpaquePointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let share = try CHandle.object(handle, as: ShareHandle.self, "share")
        guard share.stopOnce() else {
            throw ResourceError(CStatus.shareStopped, "The share was already stopped: odr_share_stop stops a share once. Free it with odr_share_destroy.")
        }
    }
}

/// `odr_share_destroy`: Stops the share if it runs and frees it (NULL is ignored). Documented in odr.h.
@_cdecl("odr_share_destroy")
public func odrShareDestroy(_ handle: OpaquePointer?) {
    guard let share = CHandle.release(handle, as: ShareHandle.self) else { return }
    defer { LiveHandles.shareDestroyed() }
    _ = share.stopOnce()
}

#else

// Built without the package's trait Sharing (`make install` without SHARING=1): the functions are
// there, so that a game links against either build, and each says how to get a library that shares.

/// Why a share function fails in a library built without the trait Sharing.
private func sharingLeftOut(_ function: String) -> ResourceError {
    ResourceError(CStatus.unsupported, "\(function): this libodr was built without sharing (it would add 11.5 MB). Build it with make install SHARING=1 to share a store with peers from the game.")
}

/// `odr_manager_start_sharing` without the trait Sharing: `ODR_E_UNSUPPORTED`. Documented in odr.h.
@_cdecl("odr_manager_start_sharing")
public func odrManagerStartSharing(
    _ handle: OpaquePointer?, _ options: UnsafePointer<odr_share_options>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in throw sharingLeftOut("odr_manager_start_sharing") }
}

/// `odr_share_port` without the trait Sharing: no share exists. Documented in odr.h.
@_cdecl("odr_share_port")
public func odrSharePort(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> odr_status {
    entryPoint { () throws(ResourceError) in throw sharingLeftOut("odr_share_port") }
}

/// `odr_share_url` without the trait Sharing: no share exists. Documented in odr.h.
@_cdecl("odr_share_url")
public func odrShareURL(
    _ handle: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ needed: UnsafeMutablePointer<Int>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in throw sharingLeftOut("odr_share_url") }
}

/// `odr_share_stats` without the trait Sharing: no share exists. Documented in odr.h.
@_cdecl("odr_share_stats")
public func odrShareStats(
    _ handle: OpaquePointer?, _ bytesSent: UnsafeMutablePointer<Int64>?, _ active: UnsafeMutablePointer<Int32>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in throw sharingLeftOut("odr_share_stats") }
}

/// `odr_share_stop` without the trait Sharing: no share exists. Documented in odr.h.
@_cdecl("odr_share_stop")
public func odrShareStop(_ handle: OpaquePointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in throw sharingLeftOut("odr_share_stop") }
}

/// `odr_share_destroy` without the trait Sharing: nothing to free. Documented in odr.h.
@_cdecl("odr_share_destroy")
public func odrShareDestroy(_ handle: OpaquePointer?) {}
#endif
