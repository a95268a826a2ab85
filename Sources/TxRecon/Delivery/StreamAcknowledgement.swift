// StreamAcknowledgement: whether an answer to a JetStream publish is the
// acknowledgement of the stream Stream= names, which alone finishes an item.
//
// libnats takes any JSON object without "error" for an acknowledgement:
// `{}` from a core NATS subscriber on the subject, or a reply shaped like
// one that names another stream, would have the item finished with nothing
// stored where the consumers read. So an answer counts only when it names
// Stream= and a sequence; any other is a failure with the reason (retried,
// and counted against the destination). That the stream's own answer is
// the only one that can name it is up to the NATS server's permissions
// (docs/jetstream.md "Who may answer": who may subscribe to the subjects).
// A duplicate that passes here is then confirmed by the transport against
// the message the stream kept (DuplicateAcknowledgement).
// Reports nothing; the reason goes into the attempt's result.

struct StreamAcknowledgement: Sendable, Equatable {
    /// The stream the answer names; empty when it names none.
    var stream: String
    var sequence: UInt64
    var duplicate: Bool

    /// What the answer to a publish on `subject` means for a destination
    /// whose Stream= is `expected`.
    func result(expecting expected: String, subject: String) -> TransportResult {
        // The name is the answerer's to choose: one line, escaped.
        let named = LogText.singleLine(stream, limit: 80)
        guard !stream.isEmpty, sequence > 0 else {
            return .failure(TransportFailure(.notAcknowledged, "the answer to the publish on \(subject) is not a "
                                             + "JetStream acknowledgement (stream \"\(named)\", sequence \(sequence)): "
                                             + "a subscriber that is not the stream answers on the subject"))
        }
        guard stream == expected else {
            return .failure(TransportFailure(.notAcknowledged, "the answer to the publish on \(subject) names stream "
                                             + "\"\(named)\", not \(expected) (Stream=): a subscriber that is not the "
                                             + "stream answers on the subject"))
        }
        return .published(stream: stream, sequence: sequence, duplicate: duplicate)
    }
}
