// Outcome: what one delivery attempt means for its item, mapped from the
// backend's answer by `Outcome.init(_:)` (the response table of
// docs/contract.md "Delivery contract", in one place). The engine acts on
// outcomes; it never looks at HTTP itself.

/// What the transport saw of one exchange.
package enum TransportResult: Sendable, Equatable {
    /// A complete HTTP response. `retryAfter` is the raw `Retry-After` header;
    /// `bodyPrefix` holds the first bytes of a 4xx answer's body (see
    /// `CurlResponseCapture.bodyPrefixLimit`), the only one a reason reads,
    /// and of a 2xx answer's when the request `keepsAnswer`; it is empty
    /// otherwise.
    case response(status: Int, retryAfter: String?, bodyPrefix: [UInt8])
    /// JetStream's publish acknowledgement: the stream stored the message
    /// (or, `duplicate`, had it already within its duplicate window).
    case published(stream: String, sequence: UInt64, duplicate: Bool)
    /// JetStream answered the publish with an error (`code` is its
    /// `err_code`, such as 10059 for a stream not found).
    case streamError(code: Int, description: String)
    /// No usable response: the request may or may not have reached the backend.
    case failure(TransportFailure)
}

/// How a destination confirmed that it durably has an item.
package enum Confirmation: Sendable, Equatable, CustomStringConvertible {
    case http(status: Int)
    /// Stored in `stream` as `sequence`; `duplicate`: stored before, within
    /// the stream's duplicate window.
    case stream(name: String, sequence: UInt64, duplicate: Bool)

    /// `HTTP 204`, `stream ORDERS sequence 42 (a duplicate)`.
    package var description: String {
        switch self {
        case let .http(status): return "HTTP \(status)"
        case let .stream(name, sequence, duplicate):
            return "stream \(name) sequence \(sequence)" + (duplicate ? " (a duplicate)" : "")
        }
    }

}

/// Why no usable response arrived.
package struct TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable, CaseIterable {
        case connect = "connection failed"
        case timeout = "timed out"
        case tls = "TLS failure"
        case dns = "name resolution failed"
        case protocolError = "unreadable response"
        /// JetStream: Stream= was not found taking the destination's
        /// subjects (StreamCapture), so nothing was sent; or the answer came
        /// back over a reconnected connection not checked yet.
        case streamCheck = "stream check"
        /// JetStream: an answer that is not Stream='s acknowledgement
        /// (StreamAcknowledgement).
        case notAcknowledged = "not acknowledged"
        /// JetStream: a duplicate acknowledgement whose stored message is
        /// not this publish's, or could not be looked up now
        /// (DuplicateAcknowledgement).
        case duplicateUnconfirmed = "duplicate not confirmed"
        case other = "transfer failed"
    }
    package var kind: Kind
    /// The transport's own words (e.g. curl's error buffer); never holds secrets.
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message.isEmpty ? kind.rawValue : "\(kind.rawValue): \(message)" }
}

/// The engine's decision for an item after one attempt.
package enum Outcome: Sendable, Equatable {
    /// The destination durably has the item (HTTP: 2xx other than 202;
    /// JetStream: a publish acknowledgement): finish it.
    case delivered(Confirmation)
    /// Keep the item and try again. `retryAfter` is the backend's requested
    /// minimum delay, already capped at one hour.
    case retryLater(reason: String, status: Int?, retryAfter: Duration?)
    /// A person must look at it (HTTP 409, 422, other 4xx; a stream that
    /// refuses it for good): move it to hold/. `status`: the HTTP status.
    case hold(reason: String, status: Int?)

    /// `Retry-After` never pushes an item further out than this.
    package static let retryAfterCap: Duration = .seconds(3600)
    /// How much of a refusal's body its hold reason keeps, bytes.
    static let reasonBodyLimit = 512

    /// Maps a transport's result to an outcome (the response table), with
    /// `redactor`'s secrets taken out of its reason: a backend that echoes
    /// the request's headers in its answer must not have the bearer token
    /// stored in hold/KEY.reason or KEY.state. `now` (seconds since 1970)
    /// resolves an HTTP-date `Retry-After`. A stream's answers are mapped by
    /// `JetStreamOutcome`.
    init(_ result: TransportResult, now: Double, redactor: SecretRedactor) {
        self = Outcome(result, now: now, redactingBody: redactor).redacted(by: redactor)
    }

    /// The response table. A refusal's body is redacted before it is cut to
    /// `reasonBodyLimit`, which could leave the beginning of a secret.
    private init(_ result: TransportResult, now: Double, redactingBody redactor: SecretRedactor) {
        switch result {
        case let .failure(failure):
            self = .retryLater(reason: failure.description, status: nil, retryAfter: nil)
        case .published, .streamError:
            self = JetStreamOutcome.outcome(of: result)
        case let .response(status, retryAfter, bodyPrefix):
            let delay = retryAfter.flatMap { RetryAfter.delay(from: $0, now: now) }
            switch status {
            case 200...299 where status != 202:
                self = .delivered(.http(status: status))
            case 202:
                self = .retryLater(reason: "HTTP 202: backend still processing", status: status, retryAfter: delay)
            // 407 (a proxy's credentials) and 421 (a connection that reached
            // the wrong virtual host, RFC 9110 15.5.20: retried on another)
            // are about the way there, not the item: held, every item would
            // wait for an operator, and the probe's hold would end an outage
            // and hold the whole queue behind it.
            case 401, 403, 407, 408, 421, 425, 429, 500...599:
                self = .retryLater(reason: "HTTP \(status)", status: status, retryAfter: delay)
            case 400...499:
                var body = bodyPrefix
                redactor.redact(&body)
                let reason = String(decoding: body.prefix(Self.reasonBodyLimit), as: UTF8.self)
                self = .hold(reason: "HTTP \(status): \(reason)", status: status)
            default:
                // 1xx after the exchange or 3xx (redirects are not followed):
                // the backend did not confirm anything, so keep the item.
                self = .retryLater(reason: "HTTP \(status): unexpected status", status: status, retryAfter: delay)
            }
        }
    }
}

extension Outcome {
    /// The outcome with `redactor`'s secrets taken out of its reason.
    private func redacted(by redactor: SecretRedactor) -> Outcome {
        switch self {
        case .delivered: return self
        case let .retryLater(reason, status, retryAfter):
            return .retryLater(reason: redactor.redact(reason), status: status, retryAfter: retryAfter)
        case let .hold(reason, status):
            return .hold(reason: redactor.redact(reason), status: status)
        }
    }
}
