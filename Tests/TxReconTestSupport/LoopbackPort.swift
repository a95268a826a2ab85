// LoopbackPort: a TCP port on 127.0.0.1 for a server a test starts in
// another process, which must be told its port before it binds it (the
// receiver's Listen=, nats-server's --port).
//
// A port bound to 0 and released again comes from the kernel's ephemeral
// range (net.ipv4.ip_local_port_range, 32768-60999 by default), where any
// outgoing connection of the busy test process (curl workers, clients of
// other tests) can be given it before the server binds it: "bind: Address
// already in use", seen under `make test-loaded`. Ports below that range are
// never handed out by connect(), so a pick there can only meet another
// test's pick: random over thousands of ports and checked free first.
import Glibc
import TxRecon

package enum LoopbackPort {
    /// A port nothing on 127.0.0.1 is bound to now, below the ephemeral range.
    package static func unused() -> UInt16 {
        let ephemeralStart = ephemeralRangeStart()
        if ephemeralStart > 11_000 {
            for _ in 0..<1000 {
                let port = UInt16.random(in: 10_000...(ephemeralStart - 1))
                if bind(port) == port { return port }
            }
        }
        // No room below the range: one the kernel picks, as before.
        return bind(0)
    }

    /// The first port of net.ipv4.ip_local_port_range (32768 if unreadable).
    private static func ephemeralRangeStart() -> UInt16 {
        guard let bytes = try? SystemCall.readFile("/proc/sys/net/ipv4/ip_local_port_range", limit: 64),
              let first = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace).first,
              let low = UInt16(first), low > 0 else { return 32_768 }
        return low
    }

    /// Binds a socket to 127.0.0.1:`port` (0: any) and releases it; the port
    /// it got, or 0 when the bind failed. Close-on-exec, so that a process
    /// spawned meanwhile cannot keep the port bound.
    private static func bind(_ port: UInt16) -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                Glibc.bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        return bound ? UInt16(bigEndian: address.sin_port) : 0
    }
}
