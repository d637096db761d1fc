#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Wraps the manager's transport: adds the catalog's extra headers to every request, and keeps the
/// live transfer handles by URL so that a request's priority changes, pauses and resumes reach the
/// transfers of its packs, whichever component started them. A transfer with alternate origins is
/// kept under each of its URLs, so the settings of a pack's primary URL reach it on any origin.
///
/// It also carries each URL's hint likelihood (the likeliest live anticipation hint naming the pack),
/// the tie-break among queued transfers of equal priority (``TransferOrder``).
final class ManagedTransport: Transport {
    private let base: any Transport
    private let headers: [String: String]
    private let state = Locked(State())

    private struct State {
        var handles: [URL: [ObjectIdentifier: any TransferHandle]] = [:]
        var priorities: [URL: TransferPriority] = [:]
        var paused: Set<URL> = []
        /// Nonzero hint likelihoods by URL.
        var hintLikelihoods: [URL: Double] = [:]
    }

    init(base: any Transport, headers: [String: String]) {
        self.base = base
        self.headers = headers
    }

    func transfer(_ request: TransferRequest, into sink: any TransferSink) -> any TransferHandle {
        var request = request
        for (name, value) in headers where request.headers[name] == nil { request.headers[name] = value }
        let urls = [request.url] + request.alternateURLs + (request.priorityURL.map { [$0] } ?? [])
        let (priority, paused, hint) = state.withLock { state in
            (urls.compactMap { state.priorities[$0] }.first, urls.contains { state.paused.contains($0) },
             urls.compactMap { state.hintLikelihoods[$0] }.max())
        }
        if let priority { request.priority = priority }
        if let hint { request.hintLikelihood = hint }
        let handle = base.transfer(request, into: sink)
        let key = ObjectIdentifier(handle)
        state.withLock { state in
            for url in urls { state.handles[url, default: [:]][key] = handle }
        }
        if paused { handle.pause() }
        Task { [weak self] in
            _ = await handle.outcome()
            self?.state.withLock { state in
                for url in urls {
                    state.handles[url]?[key] = nil
                    if state.handles[url]?.isEmpty == true { state.handles[url] = nil }
                }
            }
        }
        return handle
    }

    /// Sets the priority of current and future transfers of `url`.
    func setPriority(_ priority: TransferPriority, for url: URL) {
        let handles = state.withLock { state in
            state.priorities[url] = priority
            return Array(state.handles[url, default: [:]].values)
        }
        for handle in handles { handle.setPriority(priority) }
    }

    /// Sets the hint likelihood (0: no live hint) of current and future transfers of `url`: among
    /// queued transfers of equal priority the likelier starts first; running ones go on.
    func setHintLikelihood(_ likelihood: Double, for url: URL) {
        let handles = state.withLock { state -> [any TransferHandle] in
            guard state.hintLikelihoods[url, default: 0] != likelihood else { return [] }
            state.hintLikelihoods[url] = likelihood > 0 ? likelihood : nil
            return Array(state.handles[url, default: [:]].values)
        }
        for case let handle as any HintOrderedTransfer in handles { handle.setHintLikelihood(likelihood) }
    }

    /// The transfers of `url` that have not ended (queued or running).
    func liveTransferCount(for url: URL) -> Int {
        state.withLock { $0.handles[url]?.count ?? 0 }
    }

    /// Pauses or resumes current and future transfers of `url`.
    func setPaused(_ paused: Bool, for url: URL) {
        let handles = state.withLock { state in
            if paused { state.paused.insert(url) } else { state.paused.remove(url) }
            return Array(state.handles[url, default: [:]].values)
        }
        for handle in handles { paused ? handle.pause() : handle.resume() }
    }

    /// Forgets the settings of `url` once nothing needs it.
    func forget(_ url: URL) {
        state.withLock { state in
            state.priorities[url] = nil
            state.paused.remove(url)
            state.hintLikelihoods[url] = nil
        }
    }
}
