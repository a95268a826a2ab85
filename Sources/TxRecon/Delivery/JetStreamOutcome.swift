// JetStreamOutcome: what a JetStream publish's answer means for the item,
// the stream's counterpart of Outcome's HTTP response table.
//
//   Stream='s acknowledgement                     delivered: the stream has it
//   (a duplicate only once confirmed this
//   publish's, DuplicateAcknowledgement)
//   10054 message exceeds the maximum             hold: it will never fit
//   NATS_MAX_PAYLOAD (client-side)                hold: larger than the server takes
//   10059 stream not found                        retry: the stream changed since it
//   10060 expected stream does not match          was checked; checked again first
//   any other JetStream error                     retry (storage failure, no quorum, …)
//   the stream check failed, an answer that is    retry, counted against the destination
//   not Stream='s acknowledgement, a duplicate
//   of another subject's message, no
//   responders, timeout, no connection
//
// Only Stream='s acknowledgement is `.published` (StreamAcknowledgement);
// nothing is sent while Stream= does not capture the subjects (StreamCapture),
// so 10059 and 10060 mean the stream was deleted or changed after the check:
// like a stream not there yet, that is a destination to probe, never a hold,
// so that items need no release once the operator puts the stream right.
// "No responders" is also what a JetStream that is restarting or electing a
// leader gets: it is retried with the destination's probe, never held.

enum JetStreamOutcome {
    /// JetStream's err_code for a message over the stream's maximum size,
    /// which the transport also gives one over the server's max_payload.
    static let tooLarge = 10054

    /// The JetStream err_codes that refuse a message for good.
    static let refusals: [Int: String] = [
        10054: "the message is larger than the stream's maximum message size",
    ]

    /// The JetStream err_codes that say the stream is not as it was checked:
    /// the transport checks it again before the next publish.
    static let streamChanged: [Int: String] = [
        10059: "no such stream",
        10060: "the subject is captured by another stream than Stream= names",
    ]

    static func outcome(of result: TransportResult) -> Outcome {
        switch result {
        case let .published(stream, sequence, duplicate):
            return .delivered(.stream(name: stream, sequence: sequence, duplicate: duplicate))
        case let .streamError(code, description):
            if let refusal = refusals[code] {
                return .hold(reason: "JetStream error \(code) (\(refusal)): \(description)", status: nil)
            }
            if let change = streamChanged[code] {
                return .retryLater(reason: "JetStream error \(code) (\(change)): \(description); the stream is "
                                   + "checked again before the next publish", status: nil, retryAfter: nil)
            }
            return .retryLater(reason: "JetStream error \(code): \(description)", status: nil, retryAfter: nil)
        case let .failure(failure):
            return .retryLater(reason: failure.description, status: nil, retryAfter: nil)
        case .response:
            return .retryLater(reason: "an HTTP answer from a stream destination", status: nil, retryAfter: nil)
        }
    }
}
