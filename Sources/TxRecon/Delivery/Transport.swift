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

/// One exchange as the engine hands it to a transport: `prepare` reads the
/// item and builds the request (or ends the exchange without sending, and
/// reports that itself); `then` commits what the answer means and reports
/// it. Both may make short blocking file-system calls, so a transport runs
/// them on a thread of its own or on the engine's event loop, never on
/// Swift's cooperative pool.
package struct TransportExchange: Sendable {
    /// What `prepare` asks of the transport.
    package enum Step: Sendable {
        /// Nothing to send: the exchange ended (and reported) already.
        case ended
        /// Send the request, then hand its result to the closure.
        case send(DeliveryRequest, then: @Sendable (TransportResult) -> Void)
    }

    package let prepare: @Sendable () -> Step

    package init(prepare: @escaping @Sendable () -> Step) {
        self.prepare = prepare
    }

    /// Runs the whole exchange on the calling thread with a blocking `send`.
    package func run(sending send: (DeliveryRequest) -> TransportResult) {
        if case let .send(request, then) = prepare() { then(send(request)) }
    }
}

/// Sends requests to the configured backend URL.
///
/// Contract: `start` returns at once and runs the exchange later: its
/// `prepare`, then (when it asks to send) the request, then its `then` with
/// the result, all where blocking file-system calls are allowed (a
/// transport's own thread, or the engine's event loop). Sending reports
/// every problem as `.failure` and never throws; it ends by `Timeout=` at
/// the latest. Every exchange handed over runs exactly once, also after
/// the transport shut down (with a result that fails at once). At most
/// `MaxConcurrentDeliveries=` requests are in flight at once.
package protocol Transport: Sendable {
    func start(_ exchange: TransportExchange)
}

extension Transport {
    /// One request and nothing else around it: runs it as `start` does and
    /// suspends the caller (never blocking its thread) until it is answered.
    nonisolated(nonsending) package func send(_ request: DeliveryRequest) async -> TransportResult {
        await withCheckedContinuation { continuation in
            start(TransportExchange { .send(request) { continuation.resume(returning: $0) } })
        }
    }
}
