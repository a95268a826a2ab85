// HTTPServer: HTTP/1.1 for `txrecon receive`, from GNU libmicrohttpd.
//
// libmicrohttpd parses requests, keeps connections alive, closes idle ones,
// and runs one thread per connection, on which `handle` runs: a request's
// answer may wait for its body to be durable (GroupCommit) without holding
// up anyone else's. What it does not do is here: the connection limits, in
// all and per address, kept in its accept policy callback
// (ConnectionLimits), for a connection it refuses at its own limits is
// closed before any callback and could be neither logged nor counted; a
// deadline for a whole request, headers included (against slowloris: a
// client that sends a byte just often enough never goes idle), enforced by
// a thread that shuts down the sockets of requests past it; and a body
// limit checked against Content-Length before any byte is read, and again
// as bytes arrive. A head RFC 9112 says to reject (RequestSyntax: two
// Content-Lengths, Content-Length with chunked, `Host :`, no Host, `%00` in
// the target…) is answered 400 before anything routes it; then `screen`
// looks at the head (method, path, headers, client), so that a refusal
// (401, 404, 405, 413, 429) costs no body. Any answer given at the head
// closes the connection (libmicrohttpd reads no further), so bytes after it
// are never taken for a request.
//
// What libmicrohttpd 0.9.75 checks itself, before any callback of ours, and
// answers on its own: a request line that is not `METHOD TARGET HTTP/d.d`
// (400, or 505 for another major version), a Content-Length that is not
// digits (400) or past 2^64 (413), a header line without a colon (400), a
// head larger than its buffer (414, 431). It does not reject what
// RequestSyntax does (strict mode 1 would answer a missing Host itself,
// unlogged; -1 would refuse whitespace before a colon but not a missing
// Host), and its decoding of %-escapes is turned off: it cut a path at a
// `%00`. Those of its answers that come after the request line are reported
// like ours (the URI log callback makes the request known to it, so that its
// completion is told); one to a request line it cannot parse is not: the
// connection is closed after it, nothing was read as a body.
// Listens on a socket the caller made (its own, or systemd's), never binds
// one itself. Logs nothing; the caller does.
import CMicroHTTPD
import Dispatch
import Glibc
import Synchronization

/// What the server knows of a request before its body.
struct HTTPRequestHead: Sendable {
    /// Empty for a request libmicrohttpd refused before its head was read.
    var method: String
    /// The request-target's path (before any `?`) as sent, not
    /// %-decoded: routes compare what the client sent.
    var path: String
    /// The client's address, `127.0.0.1` or `::1`, for limits and logs.
    var client: String
    /// `HTTP/1.1` or `HTTP/1.0` (libmicrohttpd answers other versions).
    var version: String
    /// The request-target as the request line has it, query included.
    var target: String
    /// The header fields in the order they came, names as sent.
    var fields: [(name: String, value: String)]

    init(method: String, path: String, client: String, version: String = "HTTP/1.1", target: String? = nil,
         fields: [(name: String, value: String)] = []) {
        self.method = method
        self.path = path
        self.client = client
        self.version = version
        self.target = target ?? path
        self.fields = fields
    }

    /// The value of the first field `name` (case-insensitive); nil when absent.
    func header(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The values of every field `name` (case-insensitive), in order.
    func values(of name: String) -> [String] {
        let name = name.lowercased()
        return fields.filter { $0.name.lowercased() == name }.map(\.value)
    }
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
    /// Called on libmicrohttpd's listening thread with the client of each
    /// connection refused at a connection limit, the limit and its value.
    private let onConnectionRefused: @Sendable (String, ConnectionLimits.Limit, Int) -> Void
    private let connectionLimits: ConnectionLimits
    /// Called with each request this server refuses itself (400 and 501 for
    /// RequestSyntax, 413, 503 busy), and those libmicrohttpd answered
    /// before their head was read (`method` empty).
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
         onRefused: @escaping @Sendable (HTTPRequestHead, ReceiveRefusal) -> Void = { _, _ in },
         onConnectionRefused: @escaping @Sendable (String, ConnectionLimits.Limit, Int) -> Void = { _, _, _ in }) {
        self.limits = limits
        self.onRefused = onRefused
        self.onConnectionRefused = onConnectionRefused
        connectionLimits = ConnectionLimits(connections: limits.connections,
                                            connectionsPerAddress: limits.connectionsPerAddress)
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
        // Called once per request line read, before its headers: makes the
        // request's context, so that libmicrohttpd tells its completion even
        // when it answers the head itself.
        let requestLine: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?)
            -> UnsafeMutableRawPointer? = { context, target, connection in
                guard let context, let connection else { return nil }
                let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
                let request = RequestBody(target: target.map { String(cString: $0) } ?? "",
                                          client: HTTPServer.address(txr_mhd_client_address(connection)),
                                          budget: server.budget)
                return Unmanaged.passRetained(request).toOpaque()
            }
        // libmicrohttpd's default decodes %-escapes in place, and the path
        // is then a C string: `/healthz%00x` became `/healthz`. Left as sent.
        let keepEscapes: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<CChar>?) -> Int = {
            _, _, text in text.map { strlen($0) } ?? 0
        }
        let completed: MHD_RequestCompletedCallback = { context, connection, requestContext, _ in
            guard let requestContext, let raw = requestContext.pointee else { return }
            // Released at the end of this scope: gives its body bytes back.
            let request = Unmanaged<RequestBody>.fromOpaque(raw).takeRetainedValue()
            requestContext.pointee = nil
            guard let context, let connection else { return }
            let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
            let status = Int(txr_mhd_http_status(connection))
            if request.head == nil, status > 0 { server.answeredByLibrary(request, status: status) }
            server.deadlines.requestEnded(connection: connection)
        }
        let notify: MHD_NotifyConnectionCallback = { context, connection, _, event in
            guard let context, let connection else { return }
            let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
            if event == HTTPServer.connectionStarted {
                let client = HTTPServer.address(txr_mhd_client_address(connection))
                server.connectionLimits.opened(UInt(bitPattern: connection), client: client)
                server.deadlines.started(connection: connection, socket: txr_mhd_connection_fd(connection),
                                         client: client)
            } else {
                server.connectionLimits.closed(UInt(bitPattern: connection))
                server.deadlines.closed(connection: connection)
            }
        }
        // Asked for each connection accepted, before libmicrohttpd serves it.
        let admit: MHD_AcceptPolicyCallback = { context, address, _ in
            guard let context else { return .YES }
            let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
            let client = HTTPServer.address(address)
            guard let limit = server.connectionLimits.admit(client) else { return .YES }
            server.onConnectionRefused(client, limit, server.connectionLimits.value(of: limit))
            return .NO
        }
        let options = [
            MHD_OptionItem(option: .LISTEN_SOCKET, value: Int(listener), ptr_value: nil),
            // ConnectionLimits keeps the limits (see there); libmicrohttpd's
            // own, one higher, are a backstop its counts, equal to ours when
            // it asks `admit`, never reach.
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: limits.connections + 1, ptr_value: nil),
            MHD_OptionItem(option: .PER_IP_CONNECTION_LIMIT, value: limits.connectionsPerAddress + 1, ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_TIMEOUT,
                           value: Int(max(1, limits.idleTimeout.components.seconds)), ptr_value: nil),
            MHD_OptionItem(option: .URI_LOG_CALLBACK, value: unsafeBitCast(requestLine, to: Int.self),
                           ptr_value: context),
            MHD_OptionItem(option: .UNESCAPE_CALLBACK, value: unsafeBitCast(keepEscapes, to: Int.self),
                           ptr_value: nil),
            // 0, its default, said: RequestSyntax checks what 1 and -1 would,
            // and answers and logs it as the receiver's other refusals.
            MHD_OptionItem(option: .STRICT_FOR_CLIENT, value: 0, ptr_value: nil),
            MHD_OptionItem(option: .NOTIFY_COMPLETED, value: unsafeBitCast(completed, to: Int.self),
                           ptr_value: context),
            MHD_OptionItem(option: .NOTIFY_CONNECTION, value: unsafeBitCast(notify, to: Int.self),
                           ptr_value: context),
            MHD_OptionItem(option: .END, value: 0, ptr_value: nil),
        ]
        let flags = MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue
            | MHD_USE_POLL.rawValue | MHD_USE_ITC.rawValue
        let started = options.withUnsafeBufferPointer { options in
            txr_mhd_start(flags, admit, HTTPServer.accessHandler, context, options.baseAddress)
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
        context, connection, url, method, version, uploadData, uploadSize, requestContext in
        guard let context, let connection, let uploadSize, let requestContext else { return .NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
        let body: RequestBody
        if let raw = requestContext.pointee {
            body = Unmanaged<RequestBody>.fromOpaque(raw).takeUnretainedValue()
        } else {
            // The URI log callback made it, always before; in case it did not.
            let path = url.map { String(cString: $0) } ?? "/"
            body = RequestBody(target: path, client: HTTPServer.address(txr_mhd_client_address(connection)),
                               budget: server.budget)
            requestContext.pointee = Unmanaged.passRetained(body).toOpaque()
        }
        guard let head = body.head else {
            let head = HTTPServer.head(connection, url: url, method: method, version: version, target: body.target,
                                       client: body.client)
            body.headRead(head)
            server.deadlines.requestStarted(connection: connection)
            if let malformed = RequestSyntax.refusal(of: head) {
                server.onRefused(head, malformed)
                return server.queue(malformed.answer, for: body, on: connection)
            }
            if let refusal = server.screen(head) {
                return server.queue(refusal, for: body, on: connection)
            }
            if let tooLarge = server.refuseByLength(head) {
                server.onRefused(head, tooLarge)
                return server.queue(tooLarge.answer, for: body, on: connection)
            }
            return .YES
        }
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
            guard beyond == 0 || server.budget.take(beyond, from: body.client) else {
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
            server.onRefused(head, refusal)
            return server.queue(refusal.answer, for: body, on: connection)
        }
        let answer = server.deadlines.handling(connection: connection) {
            server.handle(HTTPRequest(head: head, body: body.bytes))
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

    /// The status libmicrohttpd answered a request with before its head was
    /// read (the request line was, by `requestLine`): counted and reported
    /// as the receiver's own refusals are.
    private func answeredByLibrary(_ request: RequestBody, status: Int) {
        onAnswer(status, ContinuousClock.now - request.arrived)
        let head = HTTPRequestHead(method: "", path: String(request.target.prefix { $0 != "?" }),
                                   client: request.client, target: request.target)
        onRefused(head, HTTPServer.libraryRefusal(status))
    }

    /// What libmicrohttpd's own answers at the head mean, with a code for
    /// the log (HTTPServer's header lists what it checks).
    static func libraryRefusal(_ status: Int) -> ReceiveRefusal {
        switch status {
        case 400:
            ReceiveRefusal(400, "malformed-request", "libmicrohttpd refused the head: a Content-Length that is not "
                + "a number, a header line without a colon")
        case 413: ReceiveRefusal(413, "too-large", "libmicrohttpd refused the head: a Content-Length past 2^64")
        case 414: ReceiveRefusal(414, "target-too-long", "the request-target is larger than libmicrohttpd's buffer")
        case 431: ReceiveRefusal(431, "head-too-large", "the header fields are larger than libmicrohttpd's buffer")
        case 505: ReceiveRefusal(505, "http-version-not-supported", "an HTTP version other than 1.x")
        default: ReceiveRefusal(status, "refused-by-libmicrohttpd", "libmicrohttpd answered the head itself")
        }
    }

    /// The codes of `libraryRefusal`.
    static let libraryCodes = Set([400, 413, 414, 431, 505, 0].map { libraryRefusal($0).code })

    private static func head(_ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                             version: UnsafePointer<CChar>?, target: String, client: String) -> HTTPRequestHead {
        let path = url.map { String(cString: $0) } ?? "/"
        return HTTPRequestHead(method: method.map { String(cString: $0) } ?? "", path: String(path.prefix { $0 != "?" }),
                               client: client, version: version.map { String(cString: $0) } ?? "", target: target,
                               fields: fields(of: connection))
    }

    /// Every header field of the request on `connection`, in order, as
    /// libmicrohttpd parsed them (a name is what came before the colon).
    private static func fields(of connection: OpaquePointer) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        withUnsafeMutablePointer(to: &fields) { fields in
            _ = MHD_get_connection_values_n(connection, HTTPServer.headerKind, { context, _, name, nameSize, value, valueSize in
                guard let context else { return .NO }
                func text(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> String {
                    String(decoding: UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : count), as: UTF8.self)
                }
                context.assumingMemoryBound(to: [(name: String, value: String)].self).pointee
                    .append((text(name, nameSize), text(value, valueSize)))
                return .YES
            }, fields)
        }
        return fields
    }

    /// `127.0.0.1`, `::1`: the client's address in text.
    static func address(_ address: UnsafePointer<sockaddr>?) -> String {
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
/// `@unchecked Sendable`: its mutable state (`head`, `arrived`, `bytes`,
/// `held`, `answered`, `refusal`) is touched only on the request's
/// connection thread, from the URI log callback that makes it to the
/// completion callback (whose release runs `deinit`), which libmicrohttpd
/// never runs at the same time; it crosses no other thread. `budget` is
/// shared, and Sendable itself.
private final class RequestBody: @unchecked Sendable {
    /// The request-target as sent, from the request line.
    let target: String
    let client: String
    /// Nil until the access handler's first call: then the head is whole.
    private(set) var head: HTTPRequestHead?
    /// When its request line, then its head, was read: the answer's
    /// latency starts at the head (at the line for libmicrohttpd's answers).
    private(set) var arrived = ContinuousClock.now
    var bytes: [UInt8] = []
    /// The bytes of `bytes` beyond BodyBudget.freeBytes, taken from the
    /// budget and given back at the end.
    var held = 0
    var answered = false
    /// Set once the body passed MaxFileSize= or the budget: the rest is
    /// dropped unread, and this is the answer.
    var refusal: ReceiveRefusal?
    private let budget: BodyBudget

    init(target: String, client: String, budget: BodyBudget) {
        self.target = target
        self.client = client
        self.budget = budget
    }

    deinit { budget.give(held, from: client) }

    func headRead(_ head: HTTPRequestHead) {
        self.head = head
        arrived = .now
    }

    /// Drops what was read, gives its bytes back, and answers `refusal` at the end.
    func drop(because refusal: ReceiveRefusal) {
        self.refusal = refusal
        bytes = []
        budget.give(held, from: client)
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
