// StatusCoalescing: when a status changed by an ended attempt is published.
// In a drain attempts end thousands of times a second, and what reads the
// status (STATUS=, the status file, the metrics) takes it at most once a
// second: while attempts are in flight a change is published at most every
// `interval` after the last publication, and at once when the last attempt
// ends; one flush at the due time publishes a change no later attempt
// published (they may all hang until Timeout=). Building and handing the
// status on at every end was a few percent of a drain's instructions
// (bench/FINDINGS.md). A value the engine keeps; it decides, the engine
// publishes and arms the flush.

struct StatusCoalescing {
    /// What to do with a change.
    enum Decision: Equatable {
        case publishNow
        /// Publish at `due` (engine clock) unless an attempt does first:
        /// the caller arms the flush.
        case flush(at: Duration)
        /// A flush is armed already.
        case wait
    }

    /// When the status was last published (engine clock); nil before the first.
    private(set) var publishedAt: Duration?
    /// The flush armed for a change not published yet.
    var flush: Task<Void, Never>?

    /// The status changed at `now`; `attemptsInFlight`: coalescing applies
    /// (the engine runs and attempts are out).
    func decide(at now: Duration, attemptsInFlight: Bool, interval: Duration) -> Decision {
        guard attemptsInFlight, let publishedAt else { return .publishNow }
        let due = publishedAt + interval
        guard now < due else { return .publishNow }
        return flush == nil ? .flush(at: due) : .wait
    }

    /// The status was published at `now`.
    mutating func published(at now: Duration) {
        publishedAt = now
    }
}
