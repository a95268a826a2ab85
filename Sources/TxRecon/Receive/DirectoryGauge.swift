// DirectoryGauge: how many files a spool directory holds, counted at most
// once a second however many requests ask: new/ against MaxInboxFiles=,
// rejected/ against RejectedQuota=. Listing a directory of 100,000 names
// takes tens of milliseconds; an answer must not.
import Synchronization

final class DirectoryGauge: Sendable {
    let path: String
    /// Names that do not count (a `.reason` beside a rejected file).
    private let counts: @Sendable (String) -> Bool
    private let state = Mutex<(count: Int, at: ContinuousClock.Instant)?>(nil)

    init(path: String, counts: @escaping @Sendable (String) -> Bool = { !$0.hasPrefix(".") }) {
        self.path = path
        self.counts = counts
    }

    /// The count, at most a second old; nil when the directory cannot be listed.
    func count(now: ContinuousClock.Instant = .now) -> Int? {
        if let last = state.withLock({ $0 }), now - last.at < .seconds(1) { return last.count }
        guard let names = try? SystemCall.listDirectory(path) else { return nil }
        let count = names.count { counts($0) }
        state.withLock { $0 = (count, now) }
        return count
    }
}
