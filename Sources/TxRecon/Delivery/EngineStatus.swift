// EngineStatus: the engine's state at a glance, for the STATUS= line, the
// status file read by `txrecon status`, the metrics file, and tests. A value, recomputed by the
// engine on every change; publishing it is someone else's job.

/// How the backend has been answering lately.
package enum BackendCondition: Sendable, Equatable {
    /// Nothing sent since start.
    case unknown
    /// The last attempt was delivered.
    case ok
    /// Attempts have been failing since `since` (ms since 1970); `lastError`
    /// is the latest failure in words.
    case failing(since: Int64, lastError: String)
}

package struct EngineStatus: Sendable, Equatable {
    /// Items pending: in queue/, or fresh ones read from new/ awaiting their
    /// first attempt (in flight included).
    package var queued = 0
    /// Attempts in flight.
    package var delivering = 0
    package var held = 0
    package var rejected = 0
    /// Delivered since the daemon started.
    package var delivered = 0
    /// Snapshots set aside as superseded since the daemon started.
    package var superseded = 0
    package var backend = BackendCondition.unknown
    /// While the backend fails: when its next probe goes out (ms since
    /// 1970), the next request it sees.
    package var nextRetryAt: Int64?
    /// Why intake is paused (say, the spool's file system is full); nil when it runs.
    package var intakePausedBecause: String?
    /// While intake leaves drops in new/ because too many items are
    /// pending: the count below which it reads new/ again; nil otherwise.
    package var intakeWaitsBelow: Int?
    /// `starting`, `running`, `stopping`.
    package var phase = "starting"
    /// receivedAt of the oldest item in queue/ (ms since 1970); nil when
    /// queue/ is empty. For the metrics file.
    var oldestQueuedAt: Int64?
    /// Totals, the backend's failure streak and attempt durations since
    /// start, for the metrics file.
    var statistics = DeliveryStatistics()
    /// The names of the apps served (`Settings.apps`), for STATUS.
    var apps: [String] = []

    package init() {}

    /// One line a person understands at a glance, e.g.
    /// `12 queued, 3 delivering, 1 held, 2 rejected; backend failing since 18:03:07 (HTTP 503), next probe at 18:04:40`.
    package var line: String {
        var text = "\(queued) queued, \(delivering) delivering, \(held) held, \(rejected) rejected"
        text += "; backend " + conditionText
        if let intakePausedBecause { text += "; intake paused: \(intakePausedBecause)" }
        if let intakeWaitsBelow { text += "; new/ waits until fewer than \(intakeWaitsBelow) are queued" }
        if phase != "running" { text = "\(phase): " + text }
        return text
    }

    /// How the destination answers, after its name: `ok`, `not contacted
    /// yet`, `failing since 18:03:07 (HTTP 503), next probe at 18:04:40`.
    var conditionText: String {
        switch backend {
        case .unknown: return "not contacted yet"
        case .ok: return "ok"
        case let .failing(since, lastError):
            var text = "failing since \(Timestamp.localClockTime(milliseconds: since)) (\(LogText.singleLine(lastError, limit: 80)))"
            if let nextRetryAt { text += ", next probe at \(Timestamp.localClockTime(milliseconds: nextRetryAt))" }
            return text
        }
    }
}
