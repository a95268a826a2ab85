// DirectoryGauge: how many files a spool directory holds, counted at most
// once a second however many requests ask: new/ against MaxInboxFiles=,
// rejected/ against RejectedQuota=. Listing a directory of 100,000 names
// takes tens of milliseconds; an answer must not. When the count is stale,
// one caller lists while the others go on with the stale count, so a burst
// of requests does not list the directory once each.
import Synchronization

final class DirectoryGauge: Sendable {
    private struct State {
        var count: Int
        var at: ContinuousClock.Instant
    }

    let path: String
    /// Whether a name counts (not a `.reason` beside a rejected file, not a hidden one).
    private let counts: @Sendable (String) -> Bool
    private let state = Mutex<(last: State?, listing: Bool)>((nil, false))

    init(path: String, counts: @escaping @Sendable (String) -> Bool = { !$0.hasPrefix(".") }) {
        self.path = path
        self.counts = counts
    }

    /// The count, at most a second old (or being refreshed by another
    /// caller); nil when the directory cannot be listed.
    func count(now: ContinuousClock.Instant = .now) -> Int? {
        let cached = state.withLock { state -> Int?? in
            if let last = state.last, now - last.at < .seconds(1) || state.listing { return .some(last.count) }
            state.listing = true
            return .none
        }
        if let cached { return cached }
        let names = try? SystemCall.listDirectory(path)
        let count = names.map { $0.count { counts($0) } }
        state.withLock { state in
            state.listing = false
            state.last = count.map { State(count: $0, at: now) }
        }
        return count
    }
}
