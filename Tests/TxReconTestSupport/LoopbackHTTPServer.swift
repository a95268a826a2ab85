// LoopbackHTTPServer: a small but real HTTP/1.1 server on 127.0.0.1 for tests.
//
// It listens on an ephemeral port, serves each connection on a thread of its
// own (keep-alive, Content-Length bodies, `Expect: 100-continue`), records
// every request, and answers through a handler the test sets, which can also
// misbehave: hang, close without answering, answer garbage, a truncated
// answer, or answer late. Unit tests and the integration tests that run the
// txrecon binary both use it. Touches no files; start-up failures throw
// `LoopbackHTTPServer.StartError`, and a connection that breaks the protocol
// is simply closed.
import Foundation
import Glibc
import Synchronization

/// A loopback HTTP/1.1 server that records requests and answers per handler.
///
///     let server = try LoopbackHTTPServer { request in .status(204) }
///     // POST to server.url …
///     #expect(server.requests.count == 1)
///
/// It stops when `stop()` is called or the value is released.
package final class LoopbackHTTPServer: Sendable {
    /// Decides the answer to one request. Runs on the connection's own
    /// thread, so it may block (e.g. on `waitForRequests`).
    package typealias Handler = @Sendable (Request) -> Reply

    /// The port the server listens on, chosen by the kernel.
    package let port: UInt16
    private let core: ServerCore

    /// Starts listening on 127.0.0.1 at once, on `port` (0, the default:
    /// one the kernel picks; another: that one again, to bring a stopped
    /// backend back). `handler` defaults to answering every request with 204.
    package init(port requested: UInt16 = 0, handler: @escaping Handler = { _ in .status(204) }) throws(StartError) {
        core = try ServerCore(port: requested, handler: handler)
        port = core.port
        let core = self.core
        Thread.detachNewThread { core.acceptConnections() }
    }

    deinit {
        core.stop()
    }

    /// `http://127.0.0.1:<port>/`
    package var url: String { "http://127.0.0.1:\(port)/" }

    /// Every request received so far, in arrival order.
    package var requests: [Request] { core.state.withLock { $0.requests } }

    /// The number of TCP connections accepted so far.
    package var acceptedConnections: Int { core.state.withLock { $0.acceptedConnections } }

    /// Replaces the handler for requests that arrive from now on.
    package func setHandler(_ handler: @escaping Handler) {
        core.state.withLock { $0.handler = handler }
    }

    /// Blocks the calling thread until at least `count` requests have arrived
    /// or `timeout` (real time) has passed; true when they arrived. Meant for
    /// handlers and integration tests: checks every 2 ms.
    package func waitForRequests(count: Int, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while requests.count < count {
            guard ContinuousClock.now < deadline else { return false }
            usleep(2000)
        }
        return true
    }

    /// Like the blocking form, but suspends instead of blocking a thread.
    package func waitForRequests(count: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while requests.count < count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return true
    }

    /// Stops accepting, ends every open connection (hanging and delayed
    /// answers included) and returns without waiting. Idempotent.
    package func stop() {
        core.stop()
    }
}

extension LoopbackHTTPServer {
    /// One request as the server read it.
    package struct Request: Sendable, CustomStringConvertible {
        package var method: String
        /// The request target, e.g. `/` or `/hooks?x=1`.
        package var path: String
        /// Header lines in the order received, names as sent.
        package var headers: [(name: String, value: String)]
        package var body: [UInt8]
        /// Which accepted connection carried it: 1 for the first.
        package var connection: Int

        /// The first header called `name` (case-insensitive), or nil.
        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// The body as UTF-8 text.
        package var bodyText: String { String(decoding: body, as: UTF8.self) }

        package var description: String { "\(method) \(path) (connection \(connection), \(body.count) bytes)" }
    }

    /// How the server answers one request.
    package enum Reply: Sendable {
        /// A complete response; `Content-Length` is added unless given.
        /// The connection stays open unless the request asked to close it.
        case respond(status: Int, headers: [(name: String, value: String)], body: [UInt8])
        /// Never answers; keeps reading until the client closes or the server stops.
        case hang
        /// Closes the connection without a byte of answer.
        case close
        /// Sends these bytes instead of an HTTP response, then closes.
        case garbage(String)
        /// Sends a 200 head announcing 100 body bytes, then 10, then closes.
        case truncated
        /// Waits `Duration` (real time), then answers as the inner reply says.
        indirect case delayed(Duration, Reply)

        /// A complete response with a text body.
        package static func status(_ status: Int, headers: [(name: String, value: String)] = [],
                                  body: String = "") -> Reply {
            .respond(status: status, headers: headers, body: Array(body.utf8))
        }
    }

    /// A socket call failed while starting the server.
    package struct StartError: Error, Sendable, CustomStringConvertible {
        /// The failing call, e.g. `bind`.
        package var operation: String
        package var code: Int32

        package var description: String {
            "loopback HTTP server: \(operation) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// The listening socket, the shared state and the stop signal. Threads hold
/// this rather than the server, so that releasing the server stops them.
private final class ServerCore: Sendable {
    struct State {
        var handler: LoopbackHTTPServer.Handler
        var requests: [LoopbackHTTPServer.Request] = []
        var acceptedConnections = 0
        var stopped = false
    }

    let state: Mutex<State>
    let port: UInt16
    /// Non-blocking; closed by the accept thread when it ends.
    private let listener: Int32
    /// A pipe whose write end is closed by `stop()`: from then on the read
    /// end polls readable forever, which wakes every waiting thread at once.
    private let stopReader: Int32
    private let stopWriter: Int32

    init(port requested: UInt16, handler: @escaping LoopbackHTTPServer.Handler) throws(LoopbackHTTPServer.StartError) {
        func failure(_ operation: String) -> LoopbackHTTPServer.StartError {
            LoopbackHTTPServer.StartError(operation: operation, code: errno)
        }
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                              | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard listener >= 0 else { throw failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        address.sin_port = requested.bigEndian
        // Rebinding the port of a stopped server: its old connections may
        // still be in TIME_WAIT.
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, 64) == 0
                    && getsockname(listener, socketAddress, &length) == 0
            }
        }
        guard bound else {
            let error = failure("bind/listen")
            close(listener)
            throw error
        }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            let error = failure("pipe")
            close(listener)
            throw error
        }
        // Child processes (the txrecon binary, helper servers) must not
        // inherit these; pipe2 and accept4 are not visible to Swift.
        _ = fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeEnds[1], F_SETFD, FD_CLOEXEC)
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        stopReader = pipeEnds[0]
        stopWriter = pipeEnds[1]
        state = Mutex(State(handler: handler))
    }

    deinit {
        close(stopReader)
    }

    func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { close(stopWriter) }
    }

    /// The accept loop; runs on its own thread until `stop()`.
    func acceptConnections() {
        defer { close(listener) }
        while wait(for: listener, milliseconds: -1) == .ready {
            let connection = DescriptorInheritance.exclusively { () -> Int32 in
                let connection = accept(listener, nil, nil)
                if connection >= 0 { _ = fcntl(connection, F_SETFD, FD_CLOEXEC) }
                return connection
            }
            guard connection >= 0 else { continue }
            var on: Int32 = 1
            setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            let id = state.withLock { state in
                state.acceptedConnections += 1
                return state.acceptedConnections
            }
            Thread.detachNewThread {
                var served = ServedConnection(socket: connection, id: id, core: self)
                served.run()
            }
        }
    }

    func record(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Handler {
        state.withLock { state in
            state.requests.append(request)
            return state.handler
        }
    }

    enum Readiness { case ready, stopped, timedOut }

    /// Waits until `descriptor` is readable (or -1: only for the stop signal
    /// or the time), for at most `milliseconds` (-1: no limit).
    func wait(for descriptor: Int32, milliseconds: Int32) -> Readiness {
        var descriptors = [pollfd(fd: stopReader, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while true {
            var remaining = milliseconds
            if milliseconds >= 0 {
                let left = deadline - ContinuousClock.now
                remaining = Int32(max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            }
            let count = poll(&descriptors, descriptor >= 0 ? 2 : 1, remaining)
            if count < 0 && errno == EINTR { continue }
            if count < 0 || descriptors[0].revents != 0 { return .stopped }
            if count == 0 { return .timedOut }
            return .ready
        }
    }
}

/// One accepted connection, served request after request on its own thread.
private struct ServedConnection {
    static let headerLimit = 64 * 1024
    static let bodyLimit = 16 * 1024 * 1024

    let socket: Int32
    let id: Int
    let core: ServerCore
    private var buffer: [UInt8] = []

    init(socket: Int32, id: Int, core: ServerCore) {
        self.socket = socket
        self.id = id
        self.core = core
    }

    mutating func run() {
        defer { close(socket) }
        while let (request, keepAlive) = readRequest() {
            let handler = core.record(request)
            guard answer(handler(request)), keepAlive else { return }
        }
    }

    /// Reads one request; nil when the client closed, the server stopped or
    /// the request is not one this server understands.
    private mutating func readRequest() -> (LoopbackHTTPServer.Request, keepAlive: Bool)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            headEnd = buffer.firstRange(of: separator)?.lowerBound
            if headEnd == nil {
                guard buffer.count < Self.headerLimit, receive() else { return nil }
            }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        guard header("transfer-encoding") == nil else { return nil }
        let length = header("content-length").map { Int($0) ?? -1 } ?? 0
        guard length >= 0, length <= Self.bodyLimit else { return nil }
        if header("expect")?.lowercased() == "100-continue" {
            guard sendAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
        }
        let bodyStart = headEnd! + separator.count
        while buffer.count < bodyStart + length {
            guard receive() else { return nil }
        }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        let keepAlive = requestLine[2] == "HTTP/1.1" && header("connection")?.lowercased() != "close"
        let request = LoopbackHTTPServer.Request(method: String(requestLine[0]), path: String(requestLine[1]),
                                                 headers: headers, body: body, connection: id)
        return (request, keepAlive)
    }

    /// Answers per `reply`; false when the connection must close afterwards.
    private func answer(_ reply: LoopbackHTTPServer.Reply) -> Bool {
        switch reply {
        case let .respond(status, headers, body):
            var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            if !headers.contains(where: { $0.name.lowercased() == "content-length" }) {
                head += "Content-Length: \(body.count)\r\n"
            }
            head += "\r\n"
            let closing = headers.contains { $0.name.lowercased() == "connection" && $0.value.lowercased() == "close" }
            return sendAll(Array(head.utf8) + body) && !closing
        case .hang:
            var scratch = [UInt8](repeating: 0, count: 4096)
            while core.wait(for: socket, milliseconds: -1) == .ready,
                  recv(socket, &scratch, scratch.count, 0) > 0 {}
            return false
        case .close:
            return false
        case let .garbage(text):
            _ = sendAll(Array(text.utf8))
            return false
        case .truncated:
            _ = sendAll(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789".utf8))
            return false
        case let .delayed(delay, reply):
            let milliseconds = delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
            guard core.wait(for: -1, milliseconds: Int32(milliseconds)) == .timedOut else { return false }
            return answer(reply)
        }
    }

    /// Appends what the socket has to `buffer`; false on end of stream,
    /// error or stop.
    private mutating func receive() -> Bool {
        guard core.wait(for: socket, milliseconds: -1) == .ready else { return false }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = recv(socket, &chunk, chunk.count, 0)
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }

    /// Writes all of `bytes`; false when the peer is gone. MSG_NOSIGNAL
    /// keeps a vanished client from raising SIGPIPE in the test process.
    private func sendAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 202: "Accepted"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 409: "Conflict"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
