// HTTPVersion: `[Backend] HTTPVersion=`, the HTTP version deliveries speak.

/// What the HTTP transport asks the backend for.
package enum HTTPVersion: String, Sendable, Equatable {
    /// HTTP/1.1: one request at a time per connection, one connection per
    /// concurrent delivery, kept alive.
    case http1_1 = "1.1"
    /// HTTP/2: the concurrent deliveries multiplexed as streams over one
    /// connection; over https:// negotiated by ALPN (a backend that offers
    /// only HTTP/1.1 gets HTTP/1.1), over http:// with prior knowledge (the
    /// backend must speak cleartext HTTP/2, h2c).
    case http2 = "2"
}
