// Transport: the one way the engine talks to the backend. Production uses
// `CurlTransport` (libcurl on dedicated threads); tests use a scripted fake.
// An exchange runs on the transport's thread from reading the item to
// committing its outcome, which keeps blocking I/O off the cooperative pool.

/// One HTTP POST to the backend.
public struct DeliveryRequest: Sendable, Equatable {
    /// Header lines in order, e.g. ("Idempotency-Key", "123:1690000000000").
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(headers: [(name: String, value: String)], body: [UInt8]) {
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public static func == (lhs: DeliveryRequest, rhs: DeliveryRequest) -> Bool {
        lhs.body == rhs.body && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// Sends requests to the configured backend URL, on threads of its own.
///
/// Contract: `run` suspends the caller (never blocks its thread) and runs
/// `exchange` on one of the transport's own threads, where blocking is
/// allowed: the engine reads the queued item, sends it with the `send`
/// function it is given, and commits the outcome to the spool there, so
/// that no file-system call of an attempt runs on Swift's cooperative pool.
/// `send` blocks until the exchange ends or `Timeout=` passes and reports
/// every problem as `.failure`; it never throws. At most
/// `MaxConcurrentDeliveries=` exchanges run at once.
public protocol Transport: Sendable {
    /// `nonisolated(nonsending)`: runs on the caller's executor up to the
    /// hand-over, so an attempt goes from the engine's thread to a worker
    /// and back without a detour through the cooperative pool.
    nonisolated(nonsending) func run<Result: Sendable>(
        _ exchange: @escaping @Sendable (_ send: (DeliveryRequest) -> TransportResult) -> Result
    ) async -> Result
}

extension Transport {
    /// One request and nothing else around it.
    nonisolated(nonsending) public func send(_ request: DeliveryRequest) async -> TransportResult {
        await run { send in send(request) }
    }
}
