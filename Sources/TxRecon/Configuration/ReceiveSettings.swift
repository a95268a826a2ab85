// ReceiveSettings: the [Receive] section, read only by `txrecon receive`,
// the HTTP receiver that makes Apple's notifications and the app's uploads
// durable in new/ before it answers.
import Glibc

/// `[Receive]`
package struct ReceiveSettings: Sendable, Equatable {
    /// `Listen=`: the address and port to serve when systemd does not pass
    /// a listening socket (txrecon-receive.socket does). Default
    /// 127.0.0.1:8081: plain HTTP belongs behind a reverse proxy on the
    /// same host.
    package var listen = ListenAddress(host: "127.0.0.1", port: 8081)
    /// `UploadTokenFile=`: a file holding the bearer token `POST
    /// /appstore/transactions` and `/envelopes` require; unset requires none.
    package var uploadTokenFile: String?
    /// `MaxConnections=` and `MaxConnectionsPerAddress=`: connections at
    /// once, in all and from one address.
    package var maxConnections = 256
    package var maxConnectionsPerAddress = 32
    /// `IdleTimeout=`: a connection idle this long is closed. Default 15 s.
    package var idleTimeout: Duration = .seconds(15)
    /// `RequestTimeout=`: a request must be whole this long after its first
    /// byte (headers included, against slowloris). Default 30 s.
    package var requestTimeout: Duration = .seconds(30)
    /// `MaxRequestsPerSecondPerAddress=`: requests a second from one
    /// address before 429; 0 for no limit. Default 100.
    package var maxRequestsPerSecondPerAddress = 100
    /// `MaxInboxFiles=`: with this many files waiting in new/, requests get
    /// 503 until the daemon has taken some. Default 100,000.
    package var maxInboxFiles = 100_000
    /// `RejectedQuota=`: genuine App Store data this txrecon's settings
    /// refuse (another bundle id or environment) is spooled, to land in
    /// rejected/ and be requeued after a fix, while rejected/ holds fewer
    /// files than this; past it, 503. Default 10,000.
    package var rejectedQuota = 10_000

    package init() {}
}

/// `Listen=`: `ADDRESS:PORT`, `[IPV6]:PORT`.
package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: UInt16

    package init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension SettingValue {
    /// `127.0.0.1:8081`, `0.0.0.0:443`, `[::1]:8081`: a numeric address.
    static func listenAddress(_ text: String) throws(InvalidValue) -> ListenAddress {
        let accepted = "an address and port such as 127.0.0.1:8081 or [::1]:8081"
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else {
            throw InvalidValue(message: "\"\(text)\" is not \(accepted)")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var ipv4 = in_addr(), ipv6 = in6_addr()
        guard inet_pton(AF_INET, host, &ipv4) == 1 || inet_pton(AF_INET6, host, &ipv6) == 1 else {
            throw InvalidValue(message: "\"\(text)\" is not \(accepted) (the address must be numeric)")
        }
        return ListenAddress(host: host, port: port)
    }
}
