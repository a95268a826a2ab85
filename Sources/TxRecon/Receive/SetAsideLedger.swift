// SetAsideLedger: the genuine data this receiver spooled for the daemon to
// set aside (the configuration refuses it) that rejected/'s count does not
// show yet, so that RejectedQuota= bounds what is on its way to rejected/
// too, not only what has arrived there.
//
// Without it the quota counted rejected/ alone: while the daemon was
// stopped or behind, every replay of one genuine notification for another
// app (Apple signs them; anyone who saw one can send it again) was spooled,
// up to MaxInboxFiles= files that all ended in rejected/. A body counts from
// the moment its request is let through (a reservation, so that concurrent
// requests cannot all pass the same count) until it has been gone from
// new/ for longer than rejected/'s count can be old; for those seconds it
// may be counted twice, which only makes the quota refuse a little early.
// The ledger is the running receiver's: a restart forgets what it spooled
// before (which file in new/ is set-aside data only judging it again could
// tell). new/ is looked at once a second at most, a lstat(2) per body
// counted (at most RejectedQuota= of them), only on the set-aside path.
import Glibc
import Synchronization

final class SetAsideLedger: Sendable {
    private struct State {
        /// Spooled and, at the last look, still in new/.
        var inInbox: Set<String> = []
        /// Gone from new/ (to rejected/, as a rule), and when that was seen.
        var left: [(name: String, seenAt: ContinuousClock.Instant)] = []
        /// Let through, not yet spooled or given up.
        var reserved = 0
        var lastLook: ContinuousClock.Instant?
    }

    /// How long a body gone from new/ is still counted: longer than a
    /// DirectoryGauge count can be old, with room for a slow listing.
    static let settleTime: Duration = DirectoryGauge.staleAge * 2
    /// new/ is looked at no more than this often, however many ask.
    static let lookInterval: Duration = .seconds(1)

    private let inbox: String
    private let state = Mutex(State())

    init(inbox: String) { self.inbox = inbox }

    /// Reserves room for one more set-aside body if `rejectedCount` (files
    /// in rejected/) and the bodies on their way there leave room under
    /// `quota`; every reservation ends in `spooled` or `release`.
    func reserve(quota: Int, rejectedCount: Int, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            look(&state, now: now)
            guard rejectedCount + state.inInbox.count + state.left.count + state.reserved < quota else { return false }
            state.reserved += 1
            return true
        }
    }

    /// The reserved body is in new/ under `name`.
    func spooled(_ name: String) {
        state.withLock { state in
            state.reserved -= 1
            state.inInbox.insert(name)
        }
    }

    /// The reserved body was not spooled.
    func release() {
        state.withLock { $0.reserved -= 1 }
    }

    /// How many bodies are counted beside rejected/ (for tests and status).
    func outstanding(now: ContinuousClock.Instant = .now) -> Int {
        state.withLock { state in
            look(&state, now: now)
            return state.inInbox.count + state.left.count + state.reserved
        }
    }

    /// Notes which bodies have left new/ and forgets those gone long enough.
    private func look(_ state: inout State, now: ContinuousClock.Instant) {
        if let last = state.lastLook, now - last < Self.lookInterval { return }
        state.lastLook = now
        state.left.removeAll { now - $0.seenAt >= Self.settleTime }
        for name in state.inInbox {
            var status = stat()
            if lstat(inbox + "/" + name, &status) != 0, errno == ENOENT {
                state.inInbox.remove(name)
                state.left.append((name, now))
            }
        }
    }
}
