/// The device's one network link: downloads queue on it, each pays the latency and then moves bytes
/// at the bandwidth, and nothing moves while the device is offline (transfers resume after).
struct NetworkLink {
    let bandwidth: Double
    let latency: Double
    let offline: [Range<Double>]
    private var busyUntil: Double = 0
    private var nextWindow = 0

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
        var t = max(now, busyUntil)
        while nextWindow < offline.count, offline[nextWindow].upperBound <= t { nextWindow += 1 }
        var work = latency + Double(bytes) / bandwidth
        var window = nextWindow
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
        busyUntil = t
        return t
    }
}
