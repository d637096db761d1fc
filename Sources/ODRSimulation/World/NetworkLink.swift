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
