// ConsumptionDeadlines: which CONSUMPTION_REQUESTs the operator was warned
// about as near Apple's deadline, so that each request is warned about once
// per process, and the warning itself. Apple weighs consumption information
// only for OutboxEntry.deadlineAfterRequest after it signed the request; a
// destination that answers for them and keeps failing one, or held it, is
// told about it `ConsumptionDeadlineWarning=` after the signing, until the
// deadline: past it there is nothing left to bring back in time (the outbox
// sets a late answer aside), and the request is forgotten, so that what a
// destination never delivers (dropped, superseded) is not kept for the
// daemon's life. A value the engine keeps; pure: the caller passes the time
// and logs the entry.

struct ConsumptionDeadlines {
    /// Warned-about requests by key, with the request's signedDate: those
    /// whose deadline is to come.
    private(set) var warned: [ItemKey: Int64] = [:]

    /// The warning for `item`, a CONSUMPTION_REQUEST whose destination
    /// `destination` answers for it with `warning` (ConsumptionDeadlineWarning=),
    /// when it failed again (`held` false) or was refused into hold/; nil
    /// when it is too early or too late, or the request was warned about
    /// already. `now`: the wall clock, ms since 1970.
    mutating func warning(for item: Item, held: Bool, after warning: Duration, destination: String,
                          now: Int64) -> LogEntry? {
        if warned.values.contains(where: { now >= Self.deadline(signed: $0) }) {
            warned = warned.filter { now < Self.deadline(signed: $0.value) }
        }
        let signed = item.version.secondary, deadline = Self.deadline(signed: signed)
        guard held || now - signed >= warning.milliseconds, now < deadline, warned[item.key] != signed else {
            return nil
        }
        warned[item.key] = signed
        let age = OperatorTime.age(milliseconds: max(0, now - signed))
        let what = held ? "was held (hold/)" : "is still not confirmed"
        return LogEntry(.warning, "\(item.key): the CONSUMPTION_REQUEST Apple sent \(age) ago \(what); Apple "
                        + "weighs consumption information only until \(Timestamp.rfc3339(milliseconds: deadline)): "
                        + "bring \(destination) back or release it before then",
                        messageID: MessageID.consumptionDeadline,
                        fields: [("TXRECON_ID", item.key.rawValue), ("TXRECON_AGE", age),
                                 ("TXRECON_DEADLINE", Timestamp.rfc3339(milliseconds: deadline))])
    }

    private static func deadline(signed: Int64) -> Int64 { signed + OutboxEntry.deadlineAfterRequest.milliseconds }

    /// `key` was delivered: a later request under it is warned about anew.
    mutating func delivered(_ key: ItemKey) {
        warned[key] = nil
    }
}
