import ODRRuntime

/// The device's one network link: downloads queue on it, each pays the latency and then moves bytes
/// at the bandwidth, and nothing moves while the device is offline (transfers resume after).
///
/// Downloads queued with ``enqueue(bytes:at:priority:hintLikelihood:packs:)`` (for a policy that
/// takes hints) keep their place open until they start: ``reorder(at:hintLikelihood:)`` orders
/// the queued ones by the runtime's ``ODRRuntime/TransferOrder`` within each run of equal priority
/// (the link is first come, first served across priorities, as it always was), and moves their
/// completion times.
struct NetworkLink {
    let bandwidth: Double
    let latency: Double
    let offline: [Range<Double>]
    private var busyUntil: Double = 0
    private var nextWindow = 0

    /// A download whose place can still change: queued with ``enqueue(bytes:at:priority:hintLikelihood:packs:)``.
    struct Queued {
        var order: TransferOrder
        /// When it was asked for (it cannot start before).
        let asked: Double
        /// Its seconds of transfer, latency included.
        let work: Double
        var start: Double
        var end: Double
        let packs: [PackIndex]
        /// Urgent requests whose counted wait ends with this download (see ``addWaiter(endingAt:at:)``).
        var waiters = 0
    }

    /// Downloads from ``enqueue(bytes:at:priority:hintLikelihood:packs:)`` in start order: those
    /// that started are dropped by the next call after they start.
    private(set) var queued: [Queued] = []
    /// When the last dropped download (one that started) completes.
    private var startedUntil: Double = 0
    private var nextSequence: UInt64 = 0

    /// A queued download's completion time moved.
    struct Moved {
        /// Its number from ``enqueue(bytes:at:priority:hintLikelihood:packs:)``.
        let sequence: UInt64
        let packs: [PackIndex]
        let oldEnd: Double
        let newEnd: Double
        /// The urgent requests whose wait ended with it: their wait moves by the same.
        let waiters: Int
    }

    init(bandwidth: Double, latency: Double, offline: [Range<Double>]) {
        self.bandwidth = bandwidth
        self.latency = latency
        self.offline = offline
    }

    /// When the last queued download completes: the link is idle from then on.
    var idleFrom: Double { busyUntil }

    /// Moves `work` seconds of transfer (latency included) on the link from `start` on, pausing while
    /// offline, but not past `deadline`; returns when it completes, or `nil` with `work` reduced by
    /// what was done by `deadline`. Queues nothing: a prefetch in the link's idle time, which
    /// downloads queued later do not wait for.
    func transfer(work: inout Double, from start: Double, until deadline: Double) -> Double? {
        var t = start
        for window in offline where window.upperBound > t {
            guard window.lowerBound < deadline else { break }
            if window.lowerBound > t {
                let span = window.lowerBound - t
                if work <= span { return t + work }
                work -= span
            }
            t = max(t, window.upperBound)
            guard t < deadline else { return nil }
        }
        if t + work <= deadline { return t + work }
        work -= max(0, deadline - t)
        return nil
    }

    /// Queues a download of `bytes` asked for at `now`; returns when it completes.
    mutating func download(bytes: Int64, at now: Double) -> Double {
        let start = max(now, busyUntil)
        while nextWindow < offline.count, offline[nextWindow].upperBound <= start { nextWindow += 1 }
        busyUntil = completion(of: latency + Double(bytes) / bandwidth, from: start, window: nextWindow)
        return busyUntil
    }

    /// Queues a download of `bytes` for `packs` asked for at `now`, to be ordered by `priority` and
    /// `hintLikelihood` among the downloads queued and not started (call ``reorder(at:hintLikelihood:)``
    /// to place it); returns when it completes in arrival order, and its number.
    mutating func enqueue(bytes: Int64, at now: Double, priority: TransferPriority, hintLikelihood: Double,
                          packs: [PackIndex]) -> (end: Double, sequence: UInt64) {
        dropStarted(at: now)
        let work = latency + Double(bytes) / bandwidth
        let start = max(now, busyUntil)
        let end = download(bytes: bytes, at: now)
        nextSequence += 1
        queued.append(Queued(order: TransferOrder(priority: priority, hintLikelihood: hintLikelihood, sequence: nextSequence),
                             asked: now, work: work, start: start, end: end, packs: packs))
        return (end, nextSequence)
    }

    /// Makes the queued download of `pack` (not started at `now`) urgent: an urgent request joined it.
    mutating func makeUrgent(_ pack: PackIndex, at now: Double) {
        dropStarted(at: now)
        guard let index = queued.firstIndex(where: { $0.start > now && $0.packs.contains(pack) }) else { return }
        queued[index].order.priority = .urgent
    }

    /// An urgent request began at `now` and waits until `end`: when the queued download that ends
    /// then moves, so does the request's wait (``Moved/waiters``).
    mutating func addWaiter(endingAt end: Double, at now: Double) {
        dropStarted(at: now)
        guard let index = queued.lastIndex(where: { $0.end == end && $0.start > now }) else { return }
        queued[index].waiters += 1
    }

    /// Whether some download queued with ``enqueue(bytes:at:priority:hintLikelihood:packs:)`` has
    /// not started by `now`.
    func hasQueued(at now: Double) -> Bool {
        queued.last.map { $0.start > now } ?? false
    }

    /// Orders the downloads not started by `now`, within each run of equal priority, by
    /// ``ODRRuntime/TransferOrder`` with each one's hint likelihood from `hintLikelihood` (of its
    /// packs); returns the downloads whose completion moved. Running downloads keep their place.
    mutating func reorder(at now: Double, hintLikelihood: ([PackIndex]) -> Double) -> [Moved] {
        dropStarted(at: now)
        let first = queued.firstIndex { $0.start > now } ?? queued.count
        guard first < queued.count else { return [] }
        for index in first ..< queued.count { queued[index].order.hintLikelihood = hintLikelihood(queued[index].packs) }
        // Insertion sort within runs of equal priority: a few queued downloads, mostly in order.
        var changed = queued.count
        for index in first + 1 ..< max(first + 1, queued.count) {
            var position = index
            while position > first, queued[position].order.hasSamePriority(as: queued[position - 1].order),
                  queued[position].order.startsBefore(queued[position - 1].order) {
                queued.swapAt(position, position - 1)
                position -= 1
            }
            if position < index { changed = min(changed, position) }
        }
        guard changed < queued.count else { return [] }
        var moved: [Moved] = []
        var t = changed > 0 ? queued[changed - 1].end : startedUntil
        for index in changed ..< queued.count {
            let start = max(queued[index].asked, t)
            // The first outage not over at `start` (earlier than the link's latest start).
            let window = firstWindow(endingAfter: start)
            let end = completion(of: queued[index].work, from: start, window: window)
            if end != queued[index].end {
                moved.append(Moved(sequence: queued[index].order.sequence, packs: queued[index].packs, oldEnd: queued[index].end, newEnd: end, waiters: queued[index].waiters))
            }
            queued[index].start = start
            queued[index].end = end
            t = end
        }
        busyUntil = max(busyUntil, t)
        return moved
    }

    /// Forgets the queued downloads that started by `now`.
    private mutating func dropStarted(at now: Double) {
        let started = queued.prefix { $0.start <= now }.count
        guard started > 0 else { return }
        startedUntil = queued[started - 1].end
        queued.removeFirst(started)
    }

    /// The index of the first outage that ends after `time` (outages are in time order).
    private func firstWindow(endingAfter time: Double) -> Int {
        var low = 0, high = offline.count
        while low < high {
            let middle = (low + high) / 2
            if offline[middle].upperBound <= time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// When `work` seconds of transfer starting at `start` complete, pausing while offline;
    /// `window` is the first outage that is not over at `start`.
    private func completion(of work: Double, from start: Double, window: Int) -> Double {
        var t = start
        var work = work
        var window = window
        while true {
            if window < offline.count, offline[window].lowerBound <= t {
                t = max(t, offline[window].upperBound)
                window += 1
                continue
            }
            let pause = window < offline.count ? offline[window].lowerBound : .infinity
            if t + work <= pause {
                t += work
                break
            }
            work -= pause - t
            t = pause
        }
        return t
    }
}
