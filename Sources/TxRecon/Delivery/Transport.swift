// Transport: the one way the engine talks to the backend. Production uses
// `CurlTransport` (libcurl on dedicated threads); tests use a scripted fake.

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

/// Sends requests to the configured backend URL.
///
/// Contract: `send` never throws and never blocks the calling thread; it
/// suspends until the exchange ends or `Timeout=` passes, and reports every
/// problem as `.failure`. Implementations are safe to call concurrently; the
/// engine never has more than `MaxConcurrentDeliveries=` sends outstanding.
public protocol Transport: Sendable {
    func send(_ request: DeliveryRequest) async -> TransportResult
}
