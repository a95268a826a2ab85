// LoopbackHTTPClient: HTTP/1.1 requests to a server on 127.0.0.1, one
// connection each (Connection: close), on a thread of their own so that the
// tests' cooperative pool never blocks on a socket. Also the raw socket a
// slow client needs. Parses only what the tests read: status, headers, body.
import Glibc
import TxRecon

package struct HTTPReply: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: String

    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

package enum LoopbackHTTPClient {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Sends one request and reads the whole answer.
    package static func send(port: UInt16, method: String = "POST", path: String, body: [UInt8] = [],
                             headers: [(String, String)] = []) async throws -> HTTPReply {
        try await DedicatedThread.run(name: "test-http-client") { () -> Result<HTTPReply, Failure> in
            Result { () throws(Failure) -> HTTPReply in
                let socket = try connect(port: port)
                defer { close(socket) }
                var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
                if method == "POST" { head += "Content-Length: \(body.count)\r\n" }
                for (name, value) in headers { head += "\(name): \(value)\r\n" }
                try write(socket, Array((head + "\r\n").utf8) + body)
                return try parse(readAll(socket))
            }
        }.get()
    }

    /// A connected socket to 127.0.0.1:`port`, close-on-exec: a process
    /// another test spawns meanwhile (a daemon, nats-server, openssl) would
    /// otherwise hold the connection open after the test closes it, and a
    /// server waiting for that close would wait for the child's end.
    package static func connect(port: UInt16) throws(Failure) -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(socket)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(errno)")
        }
        return socket
    }

    package static func write(_ socket: Int32, _ bytes: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += written
        }
    }

    /// Everything until the server closes (or resets) the connection.
    package static func readAll(_ socket: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return bytes }
            bytes += buffer[0..<count]
        }
    }

    static func parse(_ bytes: [UInt8]) throws(Failure) -> HTTPReply {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { throw Failure(description: "no complete answer: \(text)") }
        let lines = text[..<end.lowerBound].split(separator: "\r\n").map(String.init)
        guard let statusLine = lines.first, statusLine.split(separator: " ").count >= 2,
              let status = Int(statusLine.split(separator: " ")[1]) else {
            throw Failure(description: "no status line: \(text)")
        }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingPrefix(" ").description)
        }
        return HTTPReply(status: status, headers: headers, body: String(text[end.upperBound...]))
    }
}
