// DirectoryGauge: how many files a spool directory holds, counted at most
// once a second however many requests ask: new/ against MaxInboxFiles=,
// rejected/ against RejectedQuota=. Listing a directory of 100,000 names
// takes tens of milliseconds, and new/ grows that large exactly when the
// daemon cannot keep up; an answer must not wait for it. So once there is a
// count, a stale one is answered at once while the directory is listed
// again off the request's thread (`refresh`, one listing at a time), and the
// callers after it get the new count. Only a caller with no count to answer
// (the first, or after a listing failed) lists the directory itself.
import Synchronization

final class DirectoryGauge: Sendable {
    /// Runs a listing somewhere other than the caller's thread.
    typealias Refresher = @Sendable (_ listing: @escaping @Sendable () -> Void) -> Void

    private struct State {
        /// The last count and the instant it was asked for; nil before the
        /// first listing and after a failed one.
        var last: (count: Int, at: ContinuousClock.Instant)?
        var listing = false
    }

    let path: String
    /// Whether a name counts (not a `.reason` beside a rejected file, not a hidden one).
    private let counts: @Sendable (String) -> Bool
    private let refresh: Refresher
    private let state = Mutex(State())

    init(path: String, counts: @escaping @Sendable (String) -> Bool = { !$0.hasPrefix(".") },
         refresh: @escaping Refresher = DirectoryGauge.onThreadOfItsOwn) {
        self.path = path
        self.counts = counts
        self.refresh = refresh
    }

    /// The count, at most a second old, or older while a listing is under
    /// way; nil when the directory cannot be listed.
    func count(now: ContinuousClock.Instant = .now) -> Int? {
        enum Step { case answer(Int), answerAndRefresh(Int), list }
        let step = state.withLock { state -> Step in
            guard let last = state.last else { return .list }
            if now - last.at < .seconds(1) || state.listing { return .answer(last.count) }
            state.listing = true
            return .answerAndRefresh(last.count)
        }
        switch step {
        case let .answer(count):
            return count
        case let .answerAndRefresh(count):
            refresh { [self] in _ = list(at: now) }
            return count
        case .list:
            return list(at: now)
        }
    }

    /// Lists the directory and keeps the count (or forgets it on failure).
    private func list(at now: ContinuousClock.Instant) -> Int? {
        let count = (try? SystemCall.listDirectory(path)).map { $0.count { counts($0) } }
        state.withLock { state in
            state.listing = false
            state.last = count.map { ($0, now) }
        }
        return count
    }

    /// A thread per listing, at most one at a time per gauge; the caller
    /// lists when no thread can be started.
    static let onThreadOfItsOwn: Refresher = { listing in
        do {
            try DedicatedThread.start(name: "txrecon-gauge", listing)
        } catch {
            listing()
        }
    }
}
