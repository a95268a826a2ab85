// DuplicateAcknowledgement: whether Stream='s "duplicate" acknowledgement of
// a publish finishes the item, judged from the message the stream kept under
// that Nats-Msg-Id (JetStream's STREAM.MSG.GET of the sequence it names).
//
// A stream drops a repeated Nats-Msg-Id within its duplicate window whatever
// the subject. A duplicate of our own earlier publish (an attempt whose
// acknowledgement was lost, a restart before the move into done/) is the
// window doing its job: the message is on SUBJECT.KEY, and the item is
// finished. But a destination that shares the stream with another under
// another subject (one server reached by two URL= spellings the loader
// cannot equate, or two nodes of one cluster) is told "duplicate" for the
// other's message: nothing is on its own subject, so the item is not
// finished but retried; once the window has passed, the stream stores it.
//
// When the stored message cannot be had for a reason that will not go away
// by retrying, the item is finished as before this check, and the operator
// is told of the risk: txrecon's user may not ask (the server's permissions
// lack $JS.API.STREAM.MSG.GET.STREAM: holding instead would stall every
// retried item of an installation set up before the permission was needed,
// for a mistake the loader refuses in every form it can see), or the stream
// no longer holds that sequence (a work-queue consumer took it, limits or a
// purge removed it; a genuine retry meets that far more often than a shared
// stream does, the other's publish being a moment old). Any other failure
// of the look-up (a timeout, no responders, the connection) leaves the item
// for its next attempt, which publishes and looks again.
// Reports nothing; the transport logs and decides what to retry.

/// What JetStream's API answered when asked for a stream's message by
/// sequence.
enum StoredMessageLookup: Sendable, Equatable {
    /// The message at that sequence: its subject and Nats-Msg-Id.
    case found(subject: String, messageID: String?)
    /// The stream holds nothing at that sequence any more (err_code 10037).
    case removed
    /// The server refused txrecon's user the request (a permissions
    /// violation), in its words.
    case notPermitted(String)
    /// No answer that says either (timeout, no responders, another error).
    case failed(String)
}

enum DuplicateAcknowledgement: Sendable, Equatable {
    /// Why a duplicate acknowledgement was finished unconfirmed.
    enum Unconfirmed: Sendable, Hashable {
        case notPermitted
        case removed
    }

    /// The stored message is this publish's: finish the item.
    case ours
    /// The stored message is another subject's (or another id's): the item
    /// is not where this destination's consumers read; retry.
    case another(problem: String)
    /// It cannot be told, and retrying would not tell it: finish the item
    /// as acknowledged, and warn with `risk`.
    case unconfirmed(Unconfirmed, risk: String)
    /// It cannot be told now: retry.
    case unknown(reason: String)

    /// The verdict on a duplicate acknowledgement naming `sequence` of
    /// `stream`, for a publish of `messageID` to `subject`.
    static func judge(_ lookup: StoredMessageLookup, stream: String, sequence: UInt64, subject: String,
                      messageID: String) -> DuplicateAcknowledgement {
        let told = "stream \(stream) answered the publish on \(subject) as a duplicate of sequence \(sequence)"
        switch lookup {
        case let .found(storedSubject, storedID):
            if storedSubject == subject, storedID == messageID { return .ours }
            // What another publisher chose: one line, escaped.
            let heldSubject = LogText.singleLine(storedSubject, limit: 300)
            let heldID = storedID.map { "Nats-Msg-Id \(LogText.singleLine($0, limit: 300))" } ?? "no Nats-Msg-Id"
            return .another(problem: "\(told), which holds \(heldSubject) (\(heldID)), not \(subject) "
                            + "(Nats-Msg-Id \(messageID)): another destination, or this one before a change of "
                            + "Subject=, published it into \(stream) under another subject; retried, it is stored "
                            + "once the stream's duplicate window has passed")
        case .removed:
            return .unconfirmed(.removed, risk: "\(told), which the stream no longer holds (a work-queue consumer took "
                                + "it, or a limit or purge removed it), so it cannot be told whether it was on "
                                + "\(subject); finished as acknowledged")
        case let .notPermitted(detail):
            return .unconfirmed(.notPermitted, risk: "\(told), and txrecon may not look that message up "
                                + "(\(LogText.singleLine(detail, limit: 300))), so it cannot be told whether it was "
                                + "on \(subject); finished as acknowledged")
        case let .failed(reason):
            return .unknown(reason: "\(told), and looking that message up failed: "
                            + "\(LogText.singleLine(reason, limit: 300)); retried")
        }
    }
}
