// The test server's own promises that the transport tests do not already
// show: late answers and stopping with a connection left hanging.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct LoopbackHTTPServerTests {
    private func transport(for server: LoopbackHTTPServer, timeout: Duration) throws -> CurlTransport {
        var settings = BackendSettings()
        settings.url = server.url
        settings.timeout = timeout
        return try CurlTransport(settings: settings, tls: .init(), connections: 1, loop: TestLoop.shared)
    }

    @Test func delayedAnswerArrivesAfterItsDelay() async throws {
        let server = try LoopbackHTTPServer { _ in .delayed(.milliseconds(300), .status(200)) }
        let transport = try transport(for: server, timeout: .seconds(2))
        defer { transport.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await transport.send(DeliveryRequest(headers: [], body: [])) == .response(status: 200, retryAfter: nil, bodyPrefix: []))
        #expect(clock.now - start >= .milliseconds(300))
    }

    @Test func stoppingTheServerEndsAHangingRequestBeforeItsTimeout() async throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        // The request may reach the server late: its task needs one of the
        // two pool threads, which the suite's other tests keep busy (it once
        // took over 5 s). The 60 s timeout leaves the stop 30 s or more.
        let transport = try transport(for: server, timeout: .seconds(60))
        defer { transport.shutdown() }
        async let result = transport.send(DeliveryRequest(headers: [], body: []))
        #expect(await server.waitForRequests(count: 1, timeout: .seconds(30)))
        server.stop()
        guard case let .failure(failure) = await result else {
            Issue.record("a hanging request got an answer")
            return
        }
        // Ended by the stop, not by the 60 s timeout: that would be a
        // `.timeout` failure. What kind it is says so whatever the host's
        // load; how long its way back takes does not (5.1 s under
        // ThreadSanitizer, 22 s once in `make test-loaded`, both on 2 cores).
        #expect(failure.kind == .protocolError, "\(failure)")
    }

    @Test func requestsRecordTheirConnection() async throws {
        let server = try LoopbackHTTPServer { request in
            request.bodyText == "last" ? .status(204, headers: [("Connection", "close")]) : .status(204)
        }
        let transport = try transport(for: server, timeout: .seconds(2))
        defer { transport.shutdown() }
        for body in ["first", "last", "after"] {
            _ = await transport.send(DeliveryRequest(headers: [], body: Array(body.utf8)))
        }
        #expect(server.requests.map(\.bodyText) == ["first", "last", "after"])
        #expect(server.requests.map(\.connection) == [1, 1, 2])
        #expect(server.acceptedConnections == 2)
    }
}
