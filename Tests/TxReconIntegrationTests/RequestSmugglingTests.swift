// The built `txrecon receive` against request heads RFC 9112 says to reject,
// sent as raw bytes on 127.0.0.1: each is one that a proxy in front and the
// receiver could frame or route differently (request smuggling), answered
// 400 (the connection then closed, so that nothing after the head is read as
// a request of its own), logged, and nothing written into new/; while
// well-formed requests, chunked and kept-alive ones included, are served.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct RequestSmugglingTests {
    static func notification() throws -> [UInt8] {
        try SystemCall.readFile(DaemonIntegrationTests.samples + "/04-notification-refund.json", limit: 1 << 20)
    }

    /// A whole, valid request for the notification, closing its connection:
    /// what a smuggler hides after a head the receiver frames otherwise.
    static func smuggled() throws -> [UInt8] {
        let body = try notification()
        return Array(("POST /appstore/notifications HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + "Content-Length: \(body.count)\r\n\r\n").utf8) + body
    }

    /// Sends `bytes` on one connection and reads what comes back until the
    /// receiver closes it (at most 30 s, so that a connection wrongly kept
    /// open fails the test instead of hanging it).
    static func exchange(port: UInt16, _ bytes: [UInt8]) async throws -> String {
        let reply = try await DedicatedThread.run(name: "raw-client") { () -> Result<[UInt8], LoopbackHTTPClient.Failure> in
            Result { () throws(LoopbackHTTPClient.Failure) in
                let socket = try LoopbackHTTPClient.connect(port: port)
                defer { close(socket) }
                var limit = timeval(tv_sec: 30, tv_usec: 0)
                _ = setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                try LoopbackHTTPClient.write(socket, bytes)
                return LoopbackHTTPClient.readAll(socket)
            }
        }.get()
        return String(decoding: reply, as: UTF8.self)
    }

    /// The status of each answer in `stream`, in order.
    static func statuses(_ stream: String) -> [Int] {
        // A status line follows the last body's bytes: JSON ending in a bare
        // line feed (\r\n is one Character in Swift: isNewline splits both).
        stream.split(whereSeparator: \.isNewline)
            .filter { $0.hasPrefix("HTTP/1.") }
            .compactMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } }
    }

    /// Expects `stream` to be one 400 and nothing else, nothing spooled, and
    /// the refusal logged with `reason`.
    static func expectRefused(_ stream: String, reason: String, _ fixture: ReceiverFixture, _ receiver: DaemonProcess,
                              sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(statuses(stream) == [400], "one answer, 400, and the connection closed: \(stream)",
                sourceLocation: sourceLocation)
        #expect(stream.contains(#""error":"\#(reason)""#), "\(stream)", sourceLocation: sourceLocation)
        #expect(fixture.daemon.names("new").isEmpty, "nothing spooled", sourceLocation: sourceLocation)
        #expect(await fixture.daemon.eventually { receiver.stderr.contains("from 127.0.0.1: 400 \(reason)") },
                "logged: \(receiver.stderr)", sourceLocation: sourceLocation)
    }

    @Test func twoContentLengthsAreAnswered400AndWhatFollowsIsNotServed() async throws {
        let fixture = try ReceiverFixture()
        let receiver = try await fixture.start()
        let smuggled = try Self.smuggled()
        // A proxy that takes the last Content-Length sees one request whose
        // body is `smuggled`; one that takes the first, two requests.
        let head = "POST /appstore/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
            + "Content-Length: \(smuggled.count)\r\n\r\n"
        let stream = try await Self.exchange(port: fixture.port, Array(head.utf8) + smuggled)
        await Self.expectRefused(stream, reason: "duplicate-content-length", fixture, receiver)
    }

    @Test func contentLengthWithChunkedTransferEncodingIsAnswered400AndWhatFollowsIsNotServed() async throws {
        let fixture = try ReceiverFixture()
        let receiver = try await fixture.start()
        let smuggled = try Self.smuggled()
        // By Content-Length one request; chunked, an empty body and another request.
        let chunked = Array("0\r\n\r\n".utf8) + smuggled
        let head = "POST /appstore/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: \(chunked.count)\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n"
        let stream = try await Self.exchange(port: fixture.port, Array(head.utf8) + chunked)
        await Self.expectRefused(stream, reason: "content-length-with-transfer-encoding", fixture, receiver)
    }

    @Test func whitespaceBeforeAHeadersColonIsAnswered400() async throws {
        let fixture = try ReceiverFixture()
        let receiver = try await fixture.start()
        let body = try Self.notification()
        let head = "POST /appstore/notifications HTTP/1.1\r\nHost : x\r\nConnection: close\r\n"
            + "Content-Length: \(body.count)\r\n\r\n"
        let stream = try await Self.exchange(port: fixture.port, Array(head.utf8) + body)
        await Self.expectRefused(stream, reason: "invalid-field-name", fixture, receiver)
    }

    @Test func anHTTP11RequestWithoutHostIsAnswered400() async throws {
        let fixture = try ReceiverFixture()
        let receiver = try await fixture.start()
        let body = try Self.notification()
        let head = "POST /appstore/notifications HTTP/1.1\r\nConnection: close\r\nContent-Length: \(body.count)\r\n\r\n"
        let stream = try await Self.exchange(port: fixture.port, Array(head.utf8) + body)
        await Self.expectRefused(stream, reason: "missing-host", fixture, receiver)
    }

    @Test func aPercentEncodedNULInThePathIsAnswered400() async throws {
        let fixture = try ReceiverFixture()
        let receiver = try await fixture.start()
        let body = try Self.notification()
        // Decoded and cut at the NUL, this path is the notifications endpoint.
        let head = "POST /appstore/notifications%00.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + "Content-Length: \(body.count)\r\n\r\n"
        let stream = try await Self.exchange(port: fixture.port, Array(head.utf8) + body)
        await Self.expectRefused(stream, reason: "invalid-target", fixture, receiver)
        let health = try await Self.exchange(port: fixture.port,
                                             Array("GET /healthz%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        #expect(Self.statuses(health) == [400], "\(health)")
    }

    @Test func aHeadLibmicrohttpdRefusesItselfIsLoggedAndCountedAsTheOthers() async throws {
        let metrics = TemporaryDirectory("txrecon-receive-metrics")
        let fixture = try ReceiverFixture(spool: "[Metrics]\nTextfileDirectory=\(metrics.path)")
        let receiver = try await fixture.start()
        let body = try Self.notification()
        // libmicrohttpd answers a Content-Length that is not a number before
        // txrecon sees the request.
        let head = "POST /appstore/notifications HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 12abc\r\n\r\n"
        let stream = try await Self.exchange(port: fixture.port, Array(head.utf8) + body)
        // libmicrohttpd 0.9.75 writes the status line and headers of its own
        // error answers twice (so it does with no callback of txrecon's).
        #expect(!Self.statuses(stream).isEmpty && Self.statuses(stream).allSatisfy { $0 == 400 }, "\(stream)")
        #expect(fixture.daemon.names("new").isEmpty)
        #expect(await fixture.daemon.eventually {
            receiver.stderr.contains("/appstore/notifications from 127.0.0.1: 400 malformed-request")
        }, "logged: \(receiver.stderr)")
        #expect(await fixture.daemon.eventually {
            let text = (try? SystemCall.readFile(metrics.path + "/txrecon-receive.prom", limit: 1 << 20))
                .map { String(decoding: $0, as: UTF8.self) }
            return text.flatMap { try? PrometheusExposition(parsing: $0) }?
                .value("txrecon_receive_requests_total", ["code": "400"]) == "1"
        }, "counted with the receiver's other answers")
    }

    @Test func wellFormedRequestsChunkedKeptAliveAndHTTP10AreStillServed() async throws {
        let fixture = try ReceiverFixture()
        try await fixture.start()
        let body = try Self.notification()
        // Two on one connection, the first kept alive, the second chunked.
        let first = "POST /appstore/notifications HTTP/1.1\r\nHost: notifications.example.com\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        let chunks = Array(String(body.count, radix: 16).utf8) + Array("\r\n".utf8) + body + Array("\r\n0\r\n\r\n".utf8)
        let second = "POST /appstore/notifications HTTP/1.1\r\nHost: notifications.example.com\r\n"
            + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        let stream = try await Self.exchange(port: fixture.port,
                                             Array(first.utf8) + body + Array(second.utf8) + chunks)
        #expect(Self.statuses(stream) == [200, 200], "\(stream)")
        // HTTP/1.0 needs no Host (RFC 9112, 3.2).
        let old = "POST /appstore/notifications HTTP/1.0\r\nContent-Length: \(body.count)\r\n\r\n"
        let answer = try await Self.exchange(port: fixture.port, Array(old.utf8) + body)
        #expect(Self.statuses(answer) == [200], "\(answer)")
        #expect(fixture.daemon.names("new").count == 3)
    }
}
