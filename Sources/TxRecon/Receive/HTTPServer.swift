// HTTPServer: HTTP/1.1 for `txrecon receive`, from GNU libmicrohttpd.
//
// libmicrohttpd parses requests, keeps connections alive, limits their
// number (in all and per address), closes idle ones, and runs one thread per
// connection, on which `handle` runs: a request's answer may wait for its
// body to be durable (GroupCommit) without holding up anyone else's. What it
// does not do is here: a deadline for a whole request, headers included
// (against slowloris: a client that sends a byte just often enough never
// goes idle), enforced by a thread that shuts down the sockets of requests
// past it; and a body limit checked against Content-Length before any byte
// is read, and again as bytes arrive. `screen` looks at a request's head
// (method, path, headers, client) first, so that a refusal (401, 404, 405,
// 413, 429) costs no body. Listens on a socket the caller made (its own, or
// systemd's), never binds one itself. Logs nothing; the caller does.
import CMicroHTTPD
import Dispatch
import Glibc
import Synchronization

/// What the server knows of a request before its body.
struct HTTPRequestHead: Sendable {
    var method: String
    var path: String
    /// The client's address, `127.0.0.1` or `::1`, for limits and logs.
    var client: String
    /// The value of header `name` (case-insensitive); nil when absent.
    var header: @Sendable (String) -> String?
}

/// A whole request.
struct HTTPRequest: Sendable {
    var head: HTTPRequestHead
    var body: [UInt8]
}

/// An answer: status, headers, body.
struct HTTPAnswer: Sendable, Equatable {
    var status: Int
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []

    static func == (lhs: HTTPAnswer, rhs: HTTPAnswer) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

final class HTTPServer: Sendable {
    struct Limits: Sendable {
        /// Connections at once, in all and from one address.
        var connections: Int
        var connectionsPerAddress: Int
        /// A connection idle this long is closed (libmicrohttpd).
        var idleTimeout: Duration
        /// A request must be whole, from its first byte, within this.
        var requestTimeout: Duration
        /// The largest body taken, at start (`setMaximumBodySize` changes it).
        var maximumBodySize: Int
        /// The bytes of bodies held at once over all connections (BodyBudget).
        var bodyBudget: Int
    }

    let limits: Limits
    private let screen: @Sendable (HTTPRequestHead) -> HTTPAnswer?
    private let handle: @Sendable (HTTPRequest) -> HTTPAnswer
    /// Called on a request cut at its deadline, with its client.
    private let onDeadline: @Sendable (String) -> Void
    /// Called with each answer's status and the time from the request's
    /// first call (its head read) to the answer being queued.
    private let onAnswer: @Sendable (Int, Duration) -> Void
    /// Called with each request this server refuses itself (413; 503 busy).
    private let onRefused: @Sendable (HTTPRequestHead, ReceiveRefusal) -> Void
    /// The largest body taken now.
    private let bodyLimit: Mutex<Int>
    private let budget: BodyBudget
    /// The running `struct MHD_Daemon *`, as its bits (0 when none): a
    /// pointer is not Sendable, and only start and stop touch it.
    private let daemon = Mutex<UInt>(0)
    private let deadlines: RequestDeadlines

    init(limits: Limits, screen: @escaping @Sendable (HTTPRequestHead) -> HTTPAnswer?,
         handle: @escaping @Sendable (HTTPRequest) -> HTTPAnswer, onDeadline: @escaping @Sendable (String) -> Void,
         onAnswer: @escaping @Sendable (Int, Duration) -> Void = { _, _ in },
         onRefused: @escaping @Sendable (HTTPRequestHead, ReceiveRefusal) -> Void = { _, _ in }) {
        self.limits = limits
        self.onRefused = onRefused
        bodyLimit = Mutex(limits.maximumBodySize)
        budget = BodyBudget(limit: limits.bodyBudget, connections: limits.connections,
                            connectionsPerAddress: limits.connectionsPerAddress)
        self.screen = screen
        self.handle = handle
        self.onDeadline = onDeadline
        self.onAnswer = onAnswer
        deadlines = RequestDeadlines(timeout: limits.requestTimeout)
    }

    struct StartError: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts serving the listening socket `listener`; returns once it is served.
    func start(listening listener: Int32) throws(StartError) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        let completed: MHD_RequestCompletedCallback = { context, connection, requestContext, _ in
            guard let requestContext, let raw = requestContext.pointee else { return }
            Unmanaged<RequestBody>.fromOpaque(raw).release()
            requestContext.pointee = nil
            if let context, let connection {
                Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().deadlines.requestEnded(connection: connection)
            }
        }
        let notify: MHD_NotifyConnectionCallback = { context, connection, _, event in
            guard let context, let connection else { return }
            let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
            if event == HTTPServer.connectionStarted {
                server.deadlines.started(connection: connection, socket: txr_mhd_connection_fd(connection),
                                         client: HTTPServer.address(txr_mhd_client_address(connection)))
            } else {
                server.deadlines.closed(connection: connection)
            }
        }
        let options = [
            MHD_OptionItem(option: .LISTEN_SOCKET, value: Int(listener), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: limits.connections, ptr_value: nil),
            MHD_OptionItem(option: .PER_IP_CONNECTION_LIMIT, value: limits.connectionsPerAddress, ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_TIMEOUT,
                           value: Int(max(1, limits.idleTimeout.components.seconds)), ptr_value: nil),
            MHD_OptionItem(option: .NOTIFY_COMPLETED, value: unsafeBitCast(completed, to: Int.self),
                           ptr_value: context),
            MHD_OptionItem(option: .NOTIFY_CONNECTION, value: unsafeBitCast(notify, to: Int.self),
                           ptr_value: context),
            MHD_OptionItem(option: .END, value: 0, ptr_value: nil),
        ]
        let flags = MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue
            | MHD_USE_POLL.rawValue | MHD_USE_ITC.rawValue
        let started = options.withUnsafeBufferPointer { options in
            txr_mhd_start(flags, HTTPServer.accessHandler, context, options.baseAddress)
        }
        guard let started else { throw StartError(description: "libmicrohttpd could not serve the listening socket") }
        daemon.withLock { $0 = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(started))) }
        do {
            try deadlines.startWatching { [onDeadline] client in onDeadline(client) }
        } catch {
            throw StartError(description: "\(error)")
        }
    }

    /// The largest body taken from now on (a reload of MaxFileSize=), and
    /// the budget that follows from it.
    func setMaximumBodySize(_ bytes: Int) {
        bodyLimit.withLock { $0 = bytes }
        budget.setLimit(BodyBudget.limit(forMaximumBodySize: bytes))
    }

    /// Stops accepting; requests in flight finish; returns when all have
    /// (or after `grace`). Returns whether the listening socket is still
    /// the caller's to close: libmicrohttpd gives it back when it quiesces,
    /// and closes it itself at its stop when it could not.
    @discardableResult
    func stop(grace: Duration) -> Bool {
        let bits = daemon.withLock { daemon -> UInt in defer { daemon = 0 }; return daemon }
        guard let running = OpaquePointer(bitPattern: bits) else { return true }
        let returned = MHD_quiesce_daemon(running) != -1
        deadlines.waitUntilIdle(upTo: grace)
        MHD_stop_daemon(running)
        deadlines.stopWatching()
        return returned
    }

    // MARK: libmicrohttpd's access handler

    /// Called on the connection's thread: first with the head (no body
    /// yet), then with each part of the body, then once with none left.
    private static let accessHandler: MHD_AccessHandlerCallback = {
        context, connection, url, method, _, uploadData, uploadSize, requestContext in
        guard let context, let connection, let uploadSize, let requestContext else { return .NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
        guard let raw = requestContext.pointee else {
            let head = HTTPServer.head(connection, url: url, method: method)
            let body = RequestBody(head: head, budget: server.budget)
            requestContext.pointee = Unmanaged.passRetained(body).toOpaque()
            server.deadlines.requestStarted(connection: connection)
            if let refusal = server.screen(head) {
                return server.queue(refusal, for: body, on: connection)
            }
            if let tooLarge = server.refuseByLength(head) {
                server.onRefused(head, tooLarge)
                return server.queue(tooLarge.answer, for: body, on: connection)
            }
            return .YES
        }
        let body = Unmanaged<RequestBody>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            // libmicrohttpd takes no answer while the body is coming in: a
            // body that grows past the limit (chunked, no Content-Length),
            // or past the budget, is read on and dropped, and answered 413
            // (503 busy) at its end; RequestTimeout= bounds how long that
            // may take.
            if body.refusal != nil { return .YES }
            let limit = server.bodyLimit.withLock { $0 }
            if body.bytes.count + count > limit {
                body.drop(because: server.tooLarge(limit))
                return .YES
            }
            // A body's first BodyBudget.freeBytes are every connection's
            // own; only what a body holds beyond them is the budget's.
            let beyond = max(0, body.bytes.count + count - BodyBudget.freeBytes) - body.held
            guard beyond == 0 || server.budget.take(beyond, from: body.head.client) else {
                body.drop(because: ReceiveRefusal(503, HTTPServer.busy, "the receiver holds as many large request "
                    + "bodies as it may (\(server.budget.limit >> 20) MiB in all, each address a share); try again",
                    headers: [("Retry-After", "5")]))
                return .YES
            }
            body.held += beyond
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: count) { data in
                    body.bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
                }
            }
            return .YES
        }
        guard !body.answered else { return .YES }
        body.answered = true
        if let refusal = body.refusal {
            server.onRefused(body.head, refusal)
            return server.queue(refusal.answer, for: body, on: connection)
        }
        let answer = server.deadlines.handling(connection: connection) {
            server.handle(HTTPRequest(head: body.head, body: body.bytes))
        }
        return server.queue(answer, for: body, on: connection)
    }

    private func refuseByLength(_ head: HTTPRequestHead) -> ReceiveRefusal? {
        let limit = bodyLimit.withLock { $0 }
        guard let length = head.header("Content-Length").flatMap(Int.init), length > limit else { return nil }
        return tooLarge(limit)
    }

    /// The bytes of large bodies held now (BodyBudget), for tests.
    var bodyBytesHeld: Int { budget.inUse }

    /// The code of a body refused for the budget (BodyBudget).
    static let busy = "busy"

    private func tooLarge(_ limit: Int) -> ReceiveRefusal {
        ReceiveRefusal(413, "too-large", "the body is larger than \(limit) bytes (MaxFileSize=)")
    }

    private static func head(_ connection: OpaquePointer, url: UnsafePointer<CChar>?,
                             method: UnsafePointer<CChar>?) -> HTTPRequestHead {
        // The connection outlives every call that looks up a header.
        nonisolated(unsafe) let connection = connection
        let path = url.map { String(cString: $0) } ?? "/"
        return HTTPRequestHead(
            method: method.map { String(cString: $0) } ?? "",
            path: String(path.prefix { $0 != "?" }),
            client: HTTPServer.address(txr_mhd_client_address(connection)),
            header: { name in
                MHD_lookup_connection_value(connection, HTTPServer.headerKind, name).map { String(cString: $0) }
            })
    }

    /// `127.0.0.1`, `::1`: the client's address in text.
    private static func address(_ address: UnsafePointer<sockaddr>?) -> String {
        guard let address else { return "unknown" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            var ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            inet_ntop(AF_INET, &ipv4, &text, socklen_t(text.count))
        case AF_INET6:
            var ipv6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            inet_ntop(AF_INET6, &ipv6, &text, socklen_t(text.count))
        default:
            return "unknown"
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MHD_CONNECTION_NOTIFY_STARTED, MHD_HEADER_KIND, MHD_RESPMEM_MUST_COPY:
    // libmicrohttpd's closed enums, which Swift imports without their names.
    private static let connectionStarted = MHD_ConnectionNotificationCode(rawValue: 0)!
    private static let headerKind = MHD_ValueKind(rawValue: 1)!
    private static let mustCopy = MHD_ResponseMemoryMode(rawValue: 2)!

    private func queue(_ answer: HTTPAnswer, for request: RequestBody, on connection: OpaquePointer) -> MHD_Result {
        onAnswer(answer.status, ContinuousClock.now - request.arrived)
        let response = answer.body.withUnsafeBytes { body in
            MHD_create_response_from_buffer(body.count, UnsafeMutableRawPointer(mutating: body.baseAddress),
                                            HTTPServer.mustCopy)
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in answer.headers { _ = MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }
}

/// One request's head and the body read so far; libmicrohttpd's request
/// context, used by the one connection thread the request is on.
///
/// `@unchecked Sendable`: its mutable state (`bytes`, `held`, `answered`,
/// `refusal`) is touched only on the request's connection thread, from the
/// first call of the access handler to the completion callback (whose
/// release runs `deinit`), which libmicrohttpd never runs at the same time;
/// it crosses no other thread. `budget` is shared, and Sendable itself.
private final class RequestBody: @unchecked Sendable {
    let head: HTTPRequestHead
    /// When its head was read: the answer's latency starts here.
    let arrived = ContinuousClock.now
    var bytes: [UInt8] = []
    /// The bytes of `bytes` beyond BodyBudget.freeBytes, taken from the
    /// budget and given back at the end.
    var held = 0
    var answered = false
    /// Set once the body passed MaxFileSize= or the budget: the rest is
    /// dropped unread, and this is the answer.
    var refusal: ReceiveRefusal?
    private let budget: BodyBudget

    init(head: HTTPRequestHead, budget: BodyBudget) {
        self.head = head
        self.budget = budget
    }

    deinit { budget.give(held, from: head.client) }

    /// Drops what was read, gives its bytes back, and answers `refusal` at the end.
    func drop(because refusal: ReceiveRefusal) {
        self.refusal = refusal
        bytes = []
        budget.give(held, from: head.client)
        held = 0
    }
}

extension HTTPAnswer {
    /// A small JSON answer: `{"error": …, "detail": …}` and the like.
    static func json(_ status: Int, _ members: KeyValuePairs<String, String>,
                     headers: [(name: String, value: String)] = []) -> HTTPAnswer {
        let body = JSONValue.object(members.map { ($0.key, JSONValue.string($0.value)) }).serialized + [0x0A]
        return HTTPAnswer(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
    }
}
