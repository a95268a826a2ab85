// LogThrottle: at most one log entry a second for each subject (a client's
// address and the answer), with a count of those left out, so that a client
// sending thousands of refused requests a second does not flood the journal
// with one entry each. Subjects quiet for a minute are forgotten at the next
// entry, so the table holds only recent ones; past `capacity` of them, new
// subjects share one, so that a flood from many addresses is throttled as
// one and the table stays bounded. Reports nothing itself.
import Synchronization

final class LogThrottle: Sendable {
    private struct Subject {
        var logged: ContinuousClock.Instant
        var leftOut: Int
    }

    private let subjects = Mutex<(table: [String: Subject], swept: ContinuousClock.Instant)>(([:], .now))
    /// Subjects kept at most; then the newcomers' shared one.
    let capacity: Int
    static let sharedSubject = "(subjects beyond the table)"

    init(capacity: Int = 65_536) { self.capacity = capacity }

    /// nil to leave this entry out; else how many were left out for
    /// `subject` since its last entry (0 for none).
    func admit(_ subject: String, now: ContinuousClock.Instant = .now) -> Int? {
        subjects.withLock { state in
            if now - state.swept > .seconds(60) {
                state.table = state.table.filter { now - $0.value.logged < .seconds(60) }
                state.swept = now
            }
            var subject = subject
            if state.table[subject] == nil, state.table.count >= capacity { subject = Self.sharedSubject }
            guard var known = state.table[subject], now - known.logged < .seconds(1) else {
                let leftOut = state.table[subject]?.leftOut ?? 0
                state.table[subject] = Subject(logged: now, leftOut: 0)
                return leftOut
            }
            known.leftOut += 1
            state.table[subject] = known
            return nil
        }
    }
}
