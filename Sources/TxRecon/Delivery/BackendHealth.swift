// BackendHealth: whether the backend answers, judged from the run of
// attempts across keys, beside RetrySchedule (which paces one key). A value
// the engine keeps and consults; it decides when an outage begins (failures
// of three different keys in a row that count against the backend) and ends
// (the next answer), and remembers when the answer that ended it was sent,
// so that a request sent before it that failed is known to have met the
// outage.
//
// One key failing again and again, with nothing else sent between, is that
// key's trouble (a backend that refuses that one item with 503), not an
// outage: it follows its own schedule, and the other keys keep going at
// full concurrency.
//
// While the backend fails it is spared: at most one request per probe
// step (`ProbeDelays=`, the last step repeating), which BackendHealth paces
// here: the first probe one step after the outage began, the next one step
// after each failed probe, later when the backend's `Retry-After` asks for
// it. The engine sends the probe no earlier than its item's own next
// attempt either (`StartPacing.start`).
// Reports: nothing; the engine logs the changes it returns.

struct BackendHealth: Sendable, Equatable {
    /// Different keys that must fail in a row before the backend counts as
    /// failing: one item the backend keeps refusing with 503, alone or among
    /// items it takes, is that item's problem, not an outage.
    static let failingThreshold = 3

    /// What a recorded attempt changed.
    enum Change: Equatable {
        case none
        /// The backend is failing from now on (the threshold was reached).
        case outageBegan
        /// The backend answered after failing since `since` (wall ms).
        case outageEnded(since: Int64)
    }

    private(set) var condition = BackendCondition.unknown
    /// Failures since the backend last answered.
    private(set) var consecutiveFailures = 0
    /// The different keys among them, up to `failingThreshold`.
    private var failedKeys: [ItemKey] = []
    /// When the current run of consecutive failures began (wall ms).
    private var streakSince: Int64?
    /// When the request whose answer ended the last outage went out
    /// (engine clock).
    private var outageEndedBy: Duration?
    /// While failing: when the next probe may go out (engine clock).
    private(set) var nextProbeAt: Duration?
    /// Probes that failed in the current outage.
    private(set) var failedProbes = 0
    /// While failing: the key whose attempt is the probe out now.
    var probe: ItemKey?

    /// Whether `key`'s attempt, which just ended, was the probe; it is
    /// out no longer.
    mutating func probeEnded(_ key: ItemKey) -> Bool {
        guard probe == key else { return false }
        probe = nil
        return true
    }

    var isFailing: Bool {
        if case .failing = condition { return true }
        return false
    }

    /// The backend answered (delivered, or refused for good) a request
    /// sent at `requestSent` (engine clock).
    mutating func answered(requestSent: Duration) -> Change {
        defer {
            condition = .ok
            consecutiveFailures = 0
            failedKeys.removeAll()
            streakSince = nil
            nextProbeAt = nil
            failedProbes = 0
        }
        guard case let .failing(since, _) = condition else { return .none }
        outageEndedBy = requestSent
        return .outageEnded(since: since)
    }

    /// An attempt of `key` failed in a way that counts against the backend,
    /// at `wall` (ms since 1970) and `now` (engine clock). `wasProbe`: it was
    /// the outage's probe, whose failure moves the next probe one step on;
    /// the failure of an attempt sent before the outage began does not, but
    /// its `retryAfter` (as a probe's) puts the next probe off that long.
    mutating func failed(_ key: ItemKey, _ reason: String, at wall: Int64, now: Duration, retryAfter: Duration? = nil,
                         wasProbe: Bool = false, probes: RetrySchedule) -> Change {
        consecutiveFailures += 1
        if failedKeys.count < Self.failingThreshold, !failedKeys.contains(key) { failedKeys.append(key) }
        let since = streakSince ?? wall
        streakSince = since
        switch condition {
        case .failing:
            condition = .failing(since: since, lastError: reason)
            if wasProbe {
                failedProbes += 1
                nextProbeAt = now + probes.delay(afterFailedAttempts: failedProbes + 1, retryAfter: retryAfter)
            } else if let retryAfter {
                let asked = now + min(retryAfter, Outcome.retryAfterCap)
                nextProbeAt = max(nextProbeAt ?? asked, asked)
            }
            return .none
        case .ok, .unknown:
            guard failedKeys.count >= Self.failingThreshold else { return .none }
            condition = .failing(since: since, lastError: reason)
            failedProbes = 0
            nextProbeAt = now + probes.delay(afterFailedAttempts: 1, retryAfter: retryAfter)
            return .outageBegan
        }
    }

    /// The operator asked for a retry: while failing, the next probe goes now.
    mutating func probeNow(_ now: Duration) {
        if isFailing { nextProbeAt = now }
    }

    /// Whether a request sent at `sentAt` (engine clock) went out before
    /// the answer that ended the last outage: its failure met the outage
    /// and says nothing new about the backend.
    func metOutage(sentAt: Duration) -> Bool {
        outageEndedBy.map { sentAt < $0 } ?? false
    }
}
