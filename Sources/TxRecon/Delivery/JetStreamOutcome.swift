// JetStreamOutcome: what a JetStream publish's answer means for the item,
// the stream's counterpart of Outcome's HTTP response table.
//
//   acknowledgement (a duplicate too)      delivered: the stream has it
//   10059 stream not found                 hold: no stream will ever take it
//   10060 expected stream does not match   hold: Stream= names another
//   10054 message exceeds the maximum      hold: it will never fit
//   NATS_MAX_PAYLOAD (client-side)         hold: larger than the server takes
//   any other JetStream error              retry (storage failure, no quorum, …)
//   no responders, timeout, no connection  retry, counted against the destination
//
// "No responders" is what a subject no stream captures gets, but also what a
// JetStream that is restarting or electing a leader gets: it is retried with
// the destination's probe, never held.

enum JetStreamOutcome {
    /// JetStream's err_code for a message over the stream's maximum size,
    /// which the transport also gives one over the server's max_payload.
    static let tooLarge = 10054

    /// The JetStream err_codes that refuse a message for good.
    static let refusals: [Int: String] = [
        10059: "no such stream",
        10060: "the subject is captured by another stream than Stream= names",
        10054: "the message is larger than the stream's maximum message size",
    ]

    static func outcome(of result: TransportResult) -> Outcome {
        switch result {
        case let .published(stream, sequence, duplicate):
            return .delivered(.stream(name: stream, sequence: sequence, duplicate: duplicate))
        case let .streamError(code, description):
            if let refusal = refusals[code] {
                return .hold(reason: "JetStream error \(code) (\(refusal)): \(description)", status: nil)
            }
            return .retryLater(reason: "JetStream error \(code): \(description)", status: nil, retryAfter: nil)
        case let .failure(failure):
            return .retryLater(reason: failure.description, status: nil, retryAfter: nil)
        case .response:
            return .retryLater(reason: "an HTTP answer from a stream destination", status: nil, retryAfter: nil)
        }
    }
}
