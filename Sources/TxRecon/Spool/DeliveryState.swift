// DeliveryState: what the spool remembers about a queued item's failed
// attempts, in queue/KEY.state beside the item. Written only after a failure,
// so the hot path (deliver at the first try) never writes it; removed when the
// item leaves queue/. Times are wall-clock ms since 1970, because they must
// mean the same thing after a restart; the engine turns them back into
// monotonic deadlines when it loads them.

/// The persisted delivery history of one queued item.
package struct DeliveryState: Sendable, Equatable {
    /// Failed attempts so far; the next attempt is number `attempts + 1`.
    package var attempts = 0
    /// When the next attempt is due (ms since 1970); nil means now.
    package var nextAttemptAt: Int64?
    /// The last failure in words (`HTTP 503`, `timed out: …`).
    package var lastError: String?
    /// The HTTP status of the last failed attempt, if there was a response.
    package var lastStatus: Int?
    /// The wait planned when `nextAttemptAt` was set, in ms; nil in states
    /// written before it was recorded. At restart the remaining wait is cut
    /// to this, so a wall clock set back in between never stalls the item
    /// longer than the schedule meant.
    package var delayMilliseconds: Int64?
    /// When `txrecon replay` queued this snapshot again (ms since 1970); a
    /// stream destination sends it under a message id of its own.
    package var replayedAt: Int64?

    package init(attempts: Int = 0, nextAttemptAt: Int64? = nil, lastError: String? = nil, lastStatus: Int? = nil,
                delayMilliseconds: Int64? = nil, replayedAt: Int64? = nil) {
        self.replayedAt = replayedAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.lastStatus = lastStatus
        self.delayMilliseconds = delayMilliseconds
    }

    var json: JSONValue {
        var members: [(String, JSONValue)] = [("attempts", .integer(attempts))]
        if let nextAttemptAt { members.append(("nextAttemptAt", .integer(nextAttemptAt))) }
        if let lastError { members.append(("lastError", .string(lastError))) }
        if let lastStatus { members.append(("lastStatus", .integer(lastStatus))) }
        if let delayMilliseconds { members.append(("delayMilliseconds", .integer(delayMilliseconds))) }
        if let replayedAt { members.append(("replayedAt", .integer(replayedAt))) }
        return .object(members)
    }

    /// nil for a file that is not a state record (damaged by hand, say): the
    /// item is then simply due now, which loses nothing.
    init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes), let attempts = value["attempts"]?.int64Value,
              attempts >= 0 else { return nil }
        self.attempts = Int(attempts)
        nextAttemptAt = value["nextAttemptAt"]?.int64Value
        lastError = value["lastError"]?.stringValue
        lastStatus = value["lastStatus"]?.int64Value.map { Int($0) }
        delayMilliseconds = value["delayMilliseconds"]?.int64Value.flatMap { $0 > 0 ? $0 : nil }
        replayedAt = value["replayedAt"]?.int64Value
    }
}
