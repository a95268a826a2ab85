// AttemptVerdict: what an ended attempt means for its key, decided once.
//
// The worker ran the attempt and committed its outcome to the spool as the
// attempt's plan said (Attempt); what it reports, an Attempt.Exchange, is
// turned here into one verdict: the key's fate (delivered, refused, retried,
// set aside, forgotten) and what goes with it (the backend answered, the
// file left new/, a line for the operator). A pure function of the report,
// tested like PendingItems.place; the engine performs the verdict and
// decides nothing of its own.
//
// One policy for a spool move that failed (the item into done/ or hold/, a
// queued file that cannot be read or held): an error that will not go away
// by itself (SpoolError.isPermanent) sets the item aside in rejected/ as
// `unfinishable` instead of trying, and delivering, it again and again; any
// other leaves it pending, tried again on schedule without counting against
// the backend. Nothing is lost either way; at worst it is delivered again,
// which at-least-once allows. Two exceptions, each kept where it is safe:
// an outbox that could not take a delivered item's answer to Apple always
// retries (the answer must be written, and it is written on the next
// delivery), and a failed first attempt whose file cannot leave new/ stays
// there (its next attempt sends the item from memory, as this one did).

struct AttemptVerdict: Equatable {
    enum Fate: Equatable {
        /// Confirmed by the destination and moved into done/.
        case delivered(Confirmation)
        /// Refused for good by the destination and moved into hold/.
        case refused(reason: String, status: Int?)
        /// Its queued file no longer decodes or verifies, and is in hold/.
        case heldUndecodable(reason: String)
        /// Stays pending for its next attempt.
        case retry(Retry)
        /// Moved into rejected/ because a spool move cannot succeed.
        case setAside(because: String)
        /// Its queued file disappeared: nothing to deliver.
        case forgotten
    }

    struct Retry: Equatable {
        var reason: String
        var status: Int?
        var retryAfter: Duration?
        /// The destination failed (not the spool): counts towards an outage.
        var countsAgainstBackend: Bool
        /// Due now instead of after the schedule's next step.
        var atOnce = false
        /// A newer snapshot that waited for this attempt takes its place now.
        var placesParked = false
        /// A CONSUMPTION_REQUEST's deadline is watched (the destination failed it).
        var watchesDeadline = false
    }

    var fate: Fate
    /// The destination answered (BackendHealth.answered), whatever the spool did.
    var backendAnswered = false
    /// The item's file left new/ (into done/, hold/ or queue/).
    var leftInbox = false
    /// A fresh key's first attempt failed and its file moved into queue/: it
    /// is logged as accepted then.
    var acceptedFromInbox = false
    /// What the operator is told beside the fate's own event.
    var note: LogEntry?

    /// The verdict on an attempt that got an answer. `inbox`: the file in
    /// new/ it was sent from, if any; `metOutage`: it was sent before the
    /// end of an outage and answered after (BackendHealth.metOutage).
    static func answered(_ key: ItemKey, _ settlement: Attempt.Settlement, attempt: Int, inbox: String?,
                         metOutage: Bool) -> AttemptVerdict {
        let error = settlement.spoolError
        switch settlement.outcome {
        case let .delivered(confirmation):
            guard let error else {
                return AttemptVerdict(fate: .delivered(confirmation), backendAnswered: true, leftInbox: inbox != nil)
            }
            if settlement.outboxFailed {
                return AttemptVerdict(
                    fate: .retry(Retry(reason: "outbox: \(error)", countsAgainstBackend: false)),
                    backendAnswered: true,
                    note: LogEntry(.error, "\(key): delivered, but what it owes Apple could not be written into the "
                                   + "outbox: \(error); it will be delivered again, and answered then"))
            }
            return moveFailed(key, error,
                              setAsideBecause: "delivered on attempt \(attempt) (\(confirmation)), but it cannot be "
                              + "moved into done/: \(error)",
                              note: "delivered but not moved to done/: \(error); it will be delivered again",
                              retry: Retry(reason: "spool: \(error)", countsAgainstBackend: false),
                              backendAnswered: true)
        case let .hold(reason, status):
            guard let error else {
                return AttemptVerdict(fate: .refused(reason: reason, status: status), backendAnswered: true,
                                      leftInbox: inbox != nil)
            }
            return moveFailed(key, error,
                              setAsideBecause: "the backend refused it on attempt \(attempt) "
                              + "(\(LogText.singleLine(reason, limit: 200))), and it cannot be moved into hold/: \(error)",
                              note: "backend refused it (\(reason)) but it could not be moved to hold/: \(error)",
                              retry: Retry(reason: reason, status: status, countsAgainstBackend: false),
                              backendAnswered: true)
        case let .retryLater(reason, status, retryAfter):
            // Sent before the backend came back and answered after: the key
            // goes again at once, as every key waiting for the backend did
            // when the outage ended, instead of waiting out its next step.
            let retry = Retry(reason: reason, status: status, retryAfter: retryAfter,
                              countsAgainstBackend: !metOutage, atOnce: metOutage, placesParked: true,
                              watchesDeadline: true)
            guard let inbox else { return AttemptVerdict(fate: .retry(retry)) }
            guard let error else {
                return AttemptVerdict(fate: .retry(retry), leftInbox: true, acceptedFromInbox: true)
            }
            return AttemptVerdict(
                fate: .retry(retry),
                note: LogEntry(.warning, "\(key): new/\(LogText.escaped(inbox)) could not be moved to queue/: \(error); "
                               + "it stays in new/ and is retried on schedule (after a restart, at once)"))
        }
    }

    /// The verdict on an attempt that sent nothing: its queued file could
    /// not be read, or no longer decodes (then the worker moved it into
    /// hold/, or `holdError` says why it could not).
    static func local(_ key: ItemKey, _ end: Attempt.LocalEnd) -> AttemptVerdict {
        switch end {
        case .missing:
            return AttemptVerdict(fate: .forgotten, note: LogEntry(
                .warning, "\(key): queue/\(key.fileName) disappeared (removed by hand?); forgetting it"))
        case let .undecodable(reason, holdError):
            guard let holdError else {
                return AttemptVerdict(fate: .heldUndecodable(reason: reason),
                                      note: LogEntry(.error, "\(key): \(reason); moved to hold/"))
            }
            return moveFailed(key, holdError,
                              setAsideBecause: "\(reason), and it cannot be moved into hold/: \(holdError)",
                              note: "\(reason), but it could not be moved to hold/: \(holdError)",
                              retry: Retry(reason: reason, countsAgainstBackend: false))
        case let .unreadable(error):
            return moveFailed(key, error, setAsideBecause: "its queued file cannot be read: \(error)", note: nil,
                              retry: Retry(reason: "spool: \(error)", countsAgainstBackend: false))
        }
    }

    /// The one policy for a failed spool move (see the header).
    private static func moveFailed(_ key: ItemKey, _ error: SpoolError, setAsideBecause: String, note: String?,
                                   retry: Retry, backendAnswered: Bool = false) -> AttemptVerdict {
        if error.isPermanent {
            return AttemptVerdict(fate: .setAside(because: setAsideBecause), backendAnswered: backendAnswered)
        }
        return AttemptVerdict(fate: .retry(retry), backendAnswered: backendAnswered,
                              note: note.map { LogEntry(.error, "\(key): \($0)") })
    }
}
