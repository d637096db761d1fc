
/// How an install fetches a pack's missing entries: byte ranges of the archive, or the whole of it.
///
/// The cost model counts every request as ``requestCostBytes`` extra bytes, the bytes a connection
/// could have moved in the round trip a request costs. Two ranges merge when the gap between them
/// is at most that (downloading the gap is cheaper than another request); the whole archive is
/// fetched, in one plain GET, when that costs no more than the ranges do; and ranges beyond
/// ``maximumRequests`` merge across their smallest gaps. Both knobs are configuration values of
/// the runtime (`PackInstaller.rangePolicy`, `ResourceManager.Configuration.rangePolicy`).
///
/// ```swift
/// var installer = PackInstaller(store: store, transport: engine)
/// installer.rangePolicy = RangePolicy(requestCostBytes: 256 << 10)  // a high-latency link
/// ```
public struct RangePolicy: Sendable, Hashable {
    /// What one request costs, in bytes. Default 64 KiB: about one round trip's worth of a fast
    /// mobile or home connection (50 Mbit/s at 10 ms).
    public var requestCostBytes: Int64
    /// The most range requests for one pack. Default 64.
    public var maximumRequests: Int
    /// Whether ranges may be used at all; `false` fetches the whole archive of any pack that lacks
    /// an entry (installed files are still reused and complete staged entries still kept).
    public var usesRanges: Bool

    /// Creates a policy; a negative cost counts as 0 and fewer than one request as one.
    public init(requestCostBytes: Int64 = 64 << 10, maximumRequests: Int = 64, usesRanges: Bool = true) {
        self.requestCostBytes = max(0, requestCostBytes)
        self.maximumRequests = max(1, maximumRequests)
        self.usesRanges = usesRanges
    }
}

extension RangePolicy {
    /// Groups byte spans into requests: neighbours whose gap costs at most a request
    /// (``requestCostBytes``) share one, and beyond ``maximumRequests`` the smallest gaps close.
    ///
    /// - Parameter spans: ranges in ascending order, not overlapping.
    /// - Returns: the requests in order, each with its range (from its first span's start to its
    ///   last span's end, gaps included) and the positions in `spans` it carries.
    public func merge(_ spans: [Range<Int64>]) -> [(range: Range<Int64>, spans: Range<Int>)] {
        var requests: [(range: Range<Int64>, spans: Range<Int>)] = []
        for (index, span) in spans.enumerated() {
            if let last = requests.last, span.lowerBound - last.range.upperBound <= requestCostBytes {
                requests[requests.count - 1] = (last.range.lowerBound..<max(last.range.upperBound, span.upperBound), last.spans.lowerBound..<(index + 1))
            } else {
                requests.append((span, index..<(index + 1)))
            }
        }
        // Too many requests: close the smallest gaps first.
        while requests.count > maximumRequests {
            var smallest = 0
            var smallestGap = Int64.max
            for index in 0..<(requests.count - 1) {
                let gap = requests[index + 1].range.lowerBound - requests[index].range.upperBound
                if gap < smallestGap { (smallest, smallestGap) = (index, gap) }
            }
            let next = requests.remove(at: smallest + 1)
            requests[smallest] = (requests[smallest].range.lowerBound..<next.range.upperBound, requests[smallest].spans.lowerBound..<next.spans.upperBound)
        }
        return requests
    }
}

/// What getting one pack's entries takes: which are kept from an earlier attempt, which the
/// client holds already (same SHA-256), and which byte ranges of the archive carry the rest.
///
/// Pure: the runtime's installer gathers the facts (staging, the store's files) and carries the plan
/// out, and `odrpack diff` uses the same plan to say what an update costs a client.
///
/// ```swift
/// let plan = PackFetchPlan.make(entries: manifest.expectedEntries(inPack: id), archiveBytes: pack.archiveBytes,
///                               held: Set(oldManifest.files.map(\.sha256)))
/// print(plan.fetchBytes, plan.fetches.count)
/// ```
public struct PackFetchPlan: Sendable {
    /// One request: a byte range of the archive and the entries to take from it.
    public struct Fetch: Sendable {
        /// The archive bytes the request asks for.
        public var range: Range<Int64>
        /// The entries to take from them.
        public var targets: [PackRangeReader.Target]
        /// A plain GET of the whole archive rather than a `Range` request.
        public var isWholeArchive: Bool
        /// Archive bytes just before ``range`` that the client holds already: the first bytes, from
        /// its local header on, of the first target, a deflated entry an earlier attempt cut. The
        /// reader takes them from the client's copy, then the downloaded range. 0 when none.
        public var heldPrefix: Int64 = 0
    }

    /// Entries complete and verified from an earlier attempt.
    public var kept: [PackEntryExpectation] = []
    /// Entries whose content the client holds already.
    public var reused: [PackEntryExpectation] = []
    /// The requests, in archive order.
    public var fetches: [Fetch] = []

    /// The archive bytes the fetches download.
    public var fetchBytes: Int64 { fetches.reduce(0) { $0 + Int64($1.range.count) } }

    /// Entries whose bytes travel.
    public var fetchedEntries: Int { fetches.reduce(0) { $0 + $1.targets.count } }

    /// Bytes of cut entries that the fetches continue rather than fetch again.
    public var resumedBytes: Int64 {
        fetches.reduce(0) { total, fetch in fetch.targets.reduce(total + fetch.heldPrefix) { $0 + ($1.resume?.heldBytes ?? 0) } }
    }

    /// Plans the install of a pack.
    ///
    /// - Parameters:
    ///   - entries: the pack's distinct entries (any order).
    ///   - archiveBytes: the archive's size.
    ///   - complete: names of entries complete in staging.
    ///   - partial: stored entries cut in the middle in staging, by name, with what they hold.
    ///   - heldPrefixes: deflated entries cut in the middle, by name, with how many archive bytes
    ///     from their local header on the client holds (used only when fewer than the entry's span).
    ///   - held: SHA-256 digests of contents the client holds already (installed files).
    ///   - policy: when ranges are used and how they merge.
    public static func make(
        entries: [PackEntryExpectation], archiveBytes: Int64, complete: Set<String> = [],
        partial: [String: PackRangeReader.Resume] = [:], heldPrefixes: [String: Int64] = [:], held: Set<String> = [],
        policy: RangePolicy = RangePolicy()
    ) -> PackFetchPlan {
        let sorted = entries.sorted { $0.headerOffset < $1.headerOffset }
        var plan = PackFetchPlan()
        // Each missing entry's span: its local header through the byte before the next entry's
        // header (or the archive's end, which brings the central directory along for the last one).
        var spans: [(range: Range<Int64>, target: PackRangeReader.Target, prefix: Int64)] = []
        for (index, entry) in sorted.enumerated() {
            if complete.contains(entry.name) {
                plan.kept.append(entry)
            } else if held.contains(entry.sha256) {
                plan.reused.append(entry)
            } else {
                let end = index + 1 < sorted.count ? sorted[index + 1].headerOffset : archiveBytes
                if let resume = partial[entry.name], entry.method == .stored, policy.usesRanges,
                   let start = resumeStart(of: entry, at: resume, spanEnd: end) {
                    spans.append((start..<end, PackRangeReader.Target(entry: entry, resume: resume), 0))
                } else if let prefix = heldPrefixes[entry.name], entry.method != .stored, policy.usesRanges,
                          entry.headerOffset >= 0, end > entry.headerOffset, prefix > 0, prefix < end - entry.headerOffset {
                    spans.append(((entry.headerOffset + prefix)..<end, PackRangeReader.Target(entry: entry), prefix))
                } else {
                    spans.append((entry.headerOffset..<max(entry.headerOffset, end), PackRangeReader.Target(entry: entry), 0))
                }
            }
        }
        guard !spans.isEmpty else { return plan }
        let everything = 0..<max(0, archiveBytes)
        let wholeArchive = Fetch(range: everything, targets: spans.map { PackRangeReader.Target(entry: $0.target.entry) },
                                 isWholeArchive: true)
        guard policy.usesRanges, spans.count < sorted.count || spans.contains(where: { $0.target.resume != nil || $0.prefix > 0 }) else {
            plan.fetches = [wholeArchive]
            return plan
        }

        // Merge neighbours whose gap costs less than a request (a held prefix in the gap is then
        // downloaded again: it is at most that cost).
        let fetches = policy.merge(spans.map(\.range)).map { request in
            Fetch(range: request.range, targets: spans[request.spans].map(\.target), isWholeArchive: false,
                  heldPrefix: spans[request.spans.lowerBound].prefix)
        }
        // Saturating: a huge configured request cost only means "fewer requests".
        let rangesCost = fetches.reduce(Int64(0)) { total, fetch in
            let (withRange, overflow) = total.addingReportingOverflow(Int64(fetch.range.count))
            let (withCost, overflow2) = withRange.addingReportingOverflow(policy.requestCostBytes)
            return overflow || overflow2 ? .max : withCost
        }
        let (wholeCost, overflow) = archiveBytes.addingReportingOverflow(policy.requestCostBytes)
        plan.fetches = overflow || wholeCost > rangesCost ? fetches : [wholeArchive]
        return plan
    }

    /// Where a resumed entry's missing bytes start, or `nil` when the resume cannot be trusted.
    ///
    /// The resume comes from the staging journal and the partial file's size, outside input: it is
    /// used only when its data offset lies after the entry's local header (30 bytes and the name)
    /// and leaves room for the whole entry before `spanEnd` (the next entry's header or the archive's
    /// end), and when it holds some but not all of the entry's bytes. Otherwise (damaged, or about
    /// another archive) the entry restarts from its header. Every sum is checked.
    static func resumeStart(of entry: PackEntryExpectation, at resume: PackRangeReader.Resume, spanEnd: Int64) -> Int64? {
        let (headerEnd, overflow) = entry.headerOffset.addingReportingOverflow(30 + Int64(entry.name.utf8.count))
        let (latestData, underflow) = spanEnd.subtractingReportingOverflow(entry.storedSize)
        guard !overflow, !underflow, entry.headerOffset >= 0, entry.storedSize > 0,
              resume.dataOffset >= headerEnd, resume.dataOffset <= latestData,
              resume.heldBytes > 0, resume.heldBytes < entry.storedSize else { return nil }
        // dataOffset + heldBytes < dataOffset + storedSize <= spanEnd: no overflow.
        return resume.dataOffset + resume.heldBytes
    }
}
