// Transport: the one way the engine talks to a destination. Production uses
// `CurlTransport` (libcurl on dedicated threads) for http(s):// and
// `JetStreamTransport` (libnats) for nats:// and tls://; tests use a scripted fake.
// An exchange runs on the transport's thread from reading the item to
// committing its outcome, which keeps blocking I/O off the cooperative pool.

/// One delivery of an item: an HTTP POST's headers and body, or, to a
/// stream, the message's.
package struct DeliveryRequest: Sendable, Equatable {
    /// Header lines in order, e.g. ("Idempotency-Key", "123:1690000000000").
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]
    /// The item's key, for a stream's subject; nil when built without one.
    package var key: ItemKey?
    /// When `txrecon replay` queued the item again (ms since 1970): a
    /// stream gives the replay a message id of its own, which its duplicate
    /// window does not swallow. nil for every other delivery.
    package var replayedAt: Int64?
    /// Whether a 2xx answer's body is kept (`TransportResult.response`'s
    /// `body`): only for an item whose answer may be owed to Apple
    /// (AnswerTaker.readsAnswer).
    package var keepsAnswer = false

    package init(headers: [(name: String, value: String)], body: [UInt8], key: ItemKey? = nil) {
        self.headers = headers
        self.body = body
        self.key = key
    }

    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    package static func == (lhs: DeliveryRequest, rhs: DeliveryRequest) -> Bool {
        lhs.body == rhs.body && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value) && lhs.key == rhs.key
            && lhs.replayedAt == rhs.replayedAt
    }
}

/// Sends requests to the configured backend URL, on threads of its own.
///
/// Contract: `start` returns at once and runs `exchange` later on one of
/// the transport's own threads, where blocking is allowed: the engine reads
/// the queued item, sends it with the `send` function it is given, commits
/// the outcome to the spool, and hands the result back to itself, so that
/// no file-system call of an attempt runs on Swift's cooperative pool.
/// `send` blocks until the exchange ends or `Timeout=` passes and reports
/// every problem as `.failure`; it never throws. Every exchange handed over
/// runs exactly once, also after the transport shut down (with a `send`
/// that fails at once). At most `MaxConcurrentDeliveries=` exchanges run at
/// once.
package protocol Transport: Sendable {
    func start(_ exchange: @escaping @Sendable (_ send: (DeliveryRequest) -> TransportResult) -> Void)
}

extension Transport {
    /// One request and nothing else around it: runs it as `start` does and
    /// suspends the caller (never blocking its thread) until it is answered.
    nonisolated(nonsending) package func send(_ request: DeliveryRequest) async -> TransportResult {
        await withCheckedContinuation { continuation in
            start { send in continuation.resume(returning: send(request)) }
        }
    }
}
