// DirectoryGauge: how many files a spool directory holds, counted at most
// once a second however many requests ask: new/ against MaxInboxFiles=,
// rejected/ against RejectedQuota=. Listing a directory of 100,000 names
// takes tens of milliseconds, and new/ grows that large exactly when the
// daemon cannot keep up; an answer under load must not wait for it. So a
// request that finds the count over a second old goes on with it while the
// directory is listed again off its thread (`refresh`, one listing at a
// time), and the requests after that listing get the new count. A count
// more than a few seconds old (no request asked for a while: the directory
// may have changed by any amount) is listed by the caller itself, one caller
// at a time while the others of a burst go on with it, as is the first
// count and the one after a failed listing.
import Synchronization

final class DirectoryGauge: Sendable {
    /// Runs a listing somewhere other than the caller's thread.
    typealias Refresher = @Sendable (_ listing: @escaping @Sendable () -> Void) -> Void

    private struct State {
        /// The last count and the instant it was asked for; nil before the
        /// first listing and after a failed one.
        var last: (count: Int, at: ContinuousClock.Instant)?
        /// A listing was handed to `refresh` and has not ended.
        var listing = false
        /// A caller is listing a count older than `staleAge` itself.
        var catchingUp = false
    }

    /// Which flag a listing clears when it ends.
    private enum Listing { case first, refresh, catchUp }

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

    /// A count this old is answered while it is listed again elsewhere.
    static let refreshAge: Duration = .seconds(1)
    /// A count this old is listed again before it is answered.
    static let staleAge: Duration = .seconds(5)

    /// The count, about a second old (older by one listing's time under
    /// load); nil when the directory cannot be listed.
    func count(now: ContinuousClock.Instant = .now) -> Int? {
        enum Step { case answer(Int), answerAndRefresh(Int), list(Listing) }
        let step = state.withLock { state -> Step in
            guard let last = state.last else { return .list(.first) }
            if now - last.at >= Self.staleAge {
                if state.catchingUp { return .answer(last.count) }
                state.catchingUp = true
                return .list(.catchUp)
            }
            if now - last.at < Self.refreshAge || state.listing { return .answer(last.count) }
            state.listing = true
            return .answerAndRefresh(last.count)
        }
        switch step {
        case let .answer(count):
            return count
        case let .answerAndRefresh(count):
            refresh { [self] in _ = list(at: now, .refresh) }
            return count
        case let .list(kind):
            return list(at: now, kind)
        }
    }

    /// Lists the directory and keeps the count (or forgets it on failure),
    /// unless a listing asked for later has stored one already.
    private func list(at now: ContinuousClock.Instant, _ kind: Listing) -> Int? {
        let count = (try? SystemCall.listDirectory(path)).map { $0.count { counts($0) } }
        state.withLock { state in
            switch kind {
            case .first: break
            case .refresh: state.listing = false
            case .catchUp: state.catchingUp = false
            }
            if let last = state.last, last.at > now { return }
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
