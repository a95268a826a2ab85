// ListeningSocket: the socket `txrecon receive` serves. Under systemd it is
// the one txrecon-receive.socket passes (fd 3, sd_listen_fds(3)): systemd
// binds the port, so the service needs no privilege to bind 443, and a
// connection that arrives while the service restarts waits in the socket's
// backlog. Otherwise it opens Listen= itself.
import CSystemd
import Glibc

enum ListeningSocket {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The passed socket, or a new one listening on `address`; and whether
    /// systemd passed it.
    static func open(_ address: ListenAddress) throws(Failure) -> (socket: Int32, passed: Bool) {
        let passed = sd_listen_fds(1)
        if passed > 1 {
            throw Failure(description: "systemd passed \(passed) sockets; txrecon-receive.socket must listen on one")
        }
        if passed == 1 { return (SD_LISTEN_FDS_START, true) }
        return (try bind(address), false)
    }

    /// bind(2) of `socket` to a sockaddr_in or sockaddr_in6.
    private static func bindSocket<Address>(_ socket: Int32, to address: inout Address) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(socket, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
    }

    private static func bind(_ address: ListenAddress) throws(Failure) -> Int32 {
        let ipv6 = address.host.contains(":")
        let socket = Glibc.socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw failure("socket", address) }
        var yes: Int32 = 1
        _ = setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let result: Int32
        if ipv6 {
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = address.port.bigEndian
            _ = inet_pton(AF_INET6, address.host, &socketAddress.sin6_addr)
            result = bindSocket(socket, to: &socketAddress)
        } else {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = address.port.bigEndian
            _ = inet_pton(AF_INET, address.host, &socketAddress.sin_addr)
            result = bindSocket(socket, to: &socketAddress)
        }
        guard result == 0, listen(socket, 511) == 0 else {
            let error = failure("bind", address)
            close(socket)
            throw error
        }
        return socket
    }

    private static func failure(_ call: String, _ address: ListenAddress) -> Failure {
        Failure(description: "cannot listen on \(address) (Listen=): \(call): \(String(cString: strerror(errno)))")
    }
}
