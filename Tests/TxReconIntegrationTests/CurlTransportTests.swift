// CurlTransport against a real HTTP server on 127.0.0.1: real sockets and
// real (short) time. TLS is in CurlTransportTLSTests.
import Glibc
import Synchronization
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct CurlTransportTests {
    private func settings(_ url: String, timeout: Duration = .seconds(1)) -> BackendSettings {
        var settings = BackendSettings()
        settings.url = url
        settings.timeout = timeout
        return settings
    }

    private func request(_ body: String = #"{"id":"1"}"#) -> DeliveryRequest {
        DeliveryRequest(headers: [("Content-Type", "application/json"), ("Idempotency-Key", "1:2")],
                        body: Array(body.utf8))
    }

    private func failureKind(_ result: TransportResult) -> TransportFailure.Kind? {
        if case let .failure(failure) = result { return failure.kind }
        return nil
    }

    @Test func aRefusalCarriesTheStatusAndTheBeginningOfTheBodyASuccessNoBody() async throws {
        let limit = CurlResponseCapture.bodyPrefixLimit
        let body = String(repeating: "a", count: limit + 100)
        for status in [422, 200] {
            let server = try LoopbackHTTPServer { _ in .status(status, body: body) }
            let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
            defer { transport.shutdown() }
            let result = await transport.send(request())
            let kept = status == 422 ? Array(repeating: UInt8(ascii: "a"), count: limit) : []
            #expect(result == .response(status: status, retryAfter: nil, bodyPrefix: kept))
        }
    }

    @Test func curlLooksForAProxyOnlyWhenTheEnvironmentNamesOne() {
        let backend = settings("http://127.0.0.1:1/")
        #expect(!CurlOptions(backend, tls: .init(), environment: ["PATH": "/usr/bin", "HOME": "/"]).proxyFromEnvironment)
        for name in ["http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "no_proxy", "NO_PROXY"] {
            #expect(CurlOptions(backend, tls: .init(), environment: [name: "x"]).proxyFromEnvironment, "\(name)")
        }
        #expect(!CurlOptions(backend, tls: .init(), environment: ["PROXY_MODE": "1"]).proxyFromEnvironment)
    }

    @Test func requestArrivesAsAPostWithItsHeadersAndBodyAndWithoutExpect() async throws {
        let server = try LoopbackHTTPServer()
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        _ = await transport.send(request(#"{"id":"42"}"#))
        let received = try #require(server.requests.first)
        #expect(received.method == "POST")
        #expect(received.header("Content-Type") == "application/json")
        #expect(received.header("Idempotency-Key") == "1:2")
        #expect(received.header("Expect") == nil)
        #expect(received.bodyText == #"{"id":"42"}"#)
    }

    @Test func retryAfterHeaderIsCaptured() async throws {
        let server = try LoopbackHTTPServer { _ in .status(503, headers: [("Retry-After", " 120 ")]) }
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        #expect(await transport.send(request()) == .response(status: 503, retryAfter: "120", bodyPrefix: []))
    }

    @Test func redirectIsReportedAndNotFollowed() async throws {
        let target = try LoopbackHTTPServer()
        let server = try LoopbackHTTPServer { _ in .status(307, headers: [("Location", target.url)]) }
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        #expect(await transport.send(request()) == .response(status: 307, retryAfter: nil, bodyPrefix: []))
        #expect(target.requests.isEmpty)
    }

    @Test func refusedConnectionIsAConnectFailure() async throws {
        let port = try ClosedPort()
        let transport = try CurlTransport(settings: settings("http://127.0.0.1:\(port.number)/"), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        #expect(failureKind(await transport.send(request())) == .connect)
    }

    @Test func hangingBackendTimesOutWhileAnotherRequestCompletes() async throws {
        let server = try LoopbackHTTPServer()
        // 10 s rather than 1 s: on a loaded machine (a virtual machine
        // emulated beside the suite) the other request must comfortably
        // finish while the hung one still waits; 3 s was seen to be short.
        let transport = try CurlTransport(settings: settings(server.url, timeout: .seconds(10)), tls: .init(), connections: 2, loop: TestLoop.shared)
        defer { transport.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        // Which exchange ended first is recorded on the worker threads as
        // each ends: a task resumed after an await can be late by seconds
        // on a loaded machine (the cooperative pool has two threads), which
        // once made the 204 look later than the timeout.
        let ended = EndOrder()
        let (hangRequest, otherRequest) = (request("hang"), request())
        // For the same reason the other request starts on the server's
        // thread the moment the hung one arrives: started by the test after
        // awaiting that arrival, it once began so late under `make
        // test-loaded` that the hung one's timeout came first.
        let (otherResults, otherEnded) = AsyncStream.makeStream(of: TransportResult.self)
        server.setHandler { request in
            guard request.bodyText == "hang" else { return .status(204) }
            transport.start(TransportExchange {
                .send(otherRequest) { result in
                    ended.note("other")
                    otherEnded.yield(result)
                }
            })
            return .hang
        }
        let hung = await withCheckedContinuation { (continuation: CheckedContinuation<TransportResult, Never>) in
            transport.start(TransportExchange {
                .send(hangRequest) { result in
                    ended.note("hung")
                    continuation.resume(returning: result)
                }
            })
        }
        var others = otherResults.makeAsyncIterator()
        #expect(await others.next() == .response(status: 204, retryAfter: nil, bodyPrefix: []))
        #expect(failureKind(hung) == .timeout)
        #expect(ended.names == ["other", "hung"],
                "the other request completed while the hung one was still waiting")
        #expect(clock.now - start >= .seconds(10))
    }

    @Test func garbageAnswerIsAProtocolError() async throws {
        let server = try LoopbackHTTPServer { _ in .garbage("SSH-2.0-OpenSSH_9.2\r\n\r\n") }
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        #expect(failureKind(await transport.send(request())) == .protocolError)
    }

    @Test func truncatedAnswerIsAProtocolError() async throws {
        let server = try LoopbackHTTPServer { _ in .truncated }
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        #expect(failureKind(await transport.send(request())) == .protocolError)
    }

    @Test func connectionClosedWithoutAnswerIsAProtocolError() async throws {
        let server = try LoopbackHTTPServer { _ in .close }
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        #expect(failureKind(await transport.send(request())) == .protocolError)
    }

    @Test func sequentialRequestsShareOneConnection() async throws {
        let server = try LoopbackHTTPServer()
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        for _ in 1...5 {
            #expect(await transport.send(request()) == .response(status: 204, retryAfter: nil, bodyPrefix: []))
        }
        #expect(server.acceptedConnections == 1)
        #expect(server.requests.map(\.connection) == [1, 1, 1, 1, 1])
    }

    @Test func everyWorkerCarriesARequestAtTheSameTime() async throws {
        // Each answer waits until all three requests are in the server at
        // once, which only happens when three workers send in parallel.
        let server = try LoopbackHTTPServer()
        server.setHandler { [server] _ in
            server.waitForRequests(count: 3, timeout: .seconds(5)) ? .status(204) : .status(500)
        }
        defer { server.stop() }
        let transport = try CurlTransport(settings: settings(server.url, timeout: .seconds(10)), tls: .init(), connections: 3, loop: TestLoop.shared)
        defer { transport.shutdown() }
        let results = await withTaskGroup(of: TransportResult.self) { group in
            for _ in 1...3 { group.addTask { await transport.send(self.request()) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: .response(status: 204, retryAfter: nil, bodyPrefix: []), count: 3))
        #expect(server.acceptedConnections == 3)
    }

    @Test func overlongBodyIsCutOffAndTheStatusStillReported() async throws {
        let server = try LoopbackHTTPServer { _ in .status(409, body: String(repeating: "b", count: 3 << 20)) }
        let transport = try CurlTransport(settings: settings(server.url, timeout: .seconds(5)), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        let result = await transport.send(request())
        #expect(result == .response(status: 409, retryAfter: nil, bodyPrefix: Array(repeating: UInt8(ascii: "b"),
                                                                        count: CurlResponseCapture.bodyPrefixLimit)))
    }

    @Test func updatedSettingsApplyToTheNextAttempt() async throws {
        let first = try LoopbackHTTPServer()
        let second = try LoopbackHTTPServer { _ in .status(201) }
        let transport = try CurlTransport(settings: settings(first.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        _ = await transport.send(request())
        transport.update(settings: settings(second.url), tls: .init())
        #expect(await transport.send(request()) == .response(status: 201, retryAfter: nil, bodyPrefix: []))
        #expect(first.requests.count == 1)
        #expect(second.requests.count == 1)
    }

    @Test func urlWithAnotherSchemeIsRefusedWithoutAnAttempt() async throws {
        let transport = try CurlTransport(settings: settings("ftp://127.0.0.1/"), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        let result = await transport.send(request())
        #expect(result == .failure(TransportFailure(.other, "URL= must start with http:// or https://")))
    }

    @Test func headerWithALineBreakIsRefusedWithoutSending() async throws {
        let server = try LoopbackHTTPServer()
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 1, loop: TestLoop.shared)
        defer { transport.shutdown() }
        let smuggling = DeliveryRequest(headers: [("X-Key", "a\r\nX-Evil: 1")], body: [])
        #expect(failureKind(await transport.send(smuggling)) == .other)
        #expect(server.requests.isEmpty)
    }

    @Test func sendAfterShutdownFailsAtOnce() async throws {
        let server = try LoopbackHTTPServer()
        let transport = try CurlTransport(settings: settings(server.url), tls: .init(), connections: 2, loop: TestLoop.shared)
        transport.shutdown()
        #expect(failureKind(await transport.send(request())) == .other)
        #expect(server.requests.isEmpty)
    }
}

/// A port on 127.0.0.1 that is bound but not listening while the value
/// lives (or until `release`), so connecting to it is refused and nobody
/// else can take it.
final class ClosedPort {
    let number: UInt16
    private var socket: Int32

    init() throws {
        // Close-on-exec: a daemon the test starts must not keep it bound.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        self.socket = socket
        number = UInt16(bigEndian: address.sin_port)
        try #require(bound, "cannot bind a port on 127.0.0.1: errno \(errno)")
    }

    /// Frees the port, for a server that is to listen on it.
    func release() {
        guard socket >= 0 else { return }
        close(socket)
        socket = -1
    }

    deinit { release() }
}

/// The order in which exchanges ended, noted on the threads they ran on.
private final class EndOrder: Sendable {
    private let ended = Mutex<[String]>([])
    func note(_ name: String) { ended.withLock { $0.append(name) } }
    var names: [String] { ended.withLock { $0 } }
}
