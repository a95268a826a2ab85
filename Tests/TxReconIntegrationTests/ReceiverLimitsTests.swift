// The receiver's own limits through libmicrohttpd on loopback, with its real
// threads: RequestTimeout= does not cut a request whose body has come whole
// while it is judged and written, however long that takes (a slow disk's
// fsync), while a client that never sends a whole request still is (the
// handler waits for that other cut, an event, and so stays in handle past
// its own connection's deadline); the body budget refuses large bodies past
// it while small ones are served, and a connection closed in the middle of
// its body gives its bytes back. RequestDeadlinesTests and BodyBudgetTests
// test the bookkeeping itself on given instants.
import Dispatch
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiverLimitsTests {
    /// The port `socket` was bound to.
    static func port(of socket: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test func aWholeRequestIsNotCutWhileItIsHandledPastItsDeadline() async throws {
        let slowClientCut = DispatchSemaphore(value: 0)
        let listener = try ListeningSocket.open(ListenAddress(host: "127.0.0.1", port: 0)).socket
        let port = Self.port(of: listener)
        let server = HTTPServer(
            limits: .init(connections: 8, connectionsPerAddress: 8, idleTimeout: .seconds(1),
                          requestTimeout: .seconds(2), maximumBodySize: 1 << 20, bodyBudget: 64 << 20),
            screen: { _ in nil },
            handle: { _ in
                // Past this connection's deadline: the slow client, which
                // connected after it, has been cut.
                let cut = slowClientCut.wait(timeout: .now() + 60) == .success
                return HTTPAnswer.json(cut ? 200 : 500, ["handled": "yes"])
            },
            onDeadline: { _ in slowClientCut.signal() })
        try server.start(listening: listener)
        defer { server.stop(grace: .seconds(1)) }

        let whole = try LoopbackHTTPClient.connect(port: port)
        defer { close(whole) }
        try LoopbackHTTPClient.write(whole, Array(("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            + "Connection: close\r\n\r\n{}").utf8))
        // A byte a quarter second: never idle for IdleTimeout=, never whole.
        let slow = Task {
            try await DedicatedThread.run(name: "slowloris") { () -> Result<Void, LoopbackHTTPClient.Failure> in
                Result { () throws(LoopbackHTTPClient.Failure) in
                    let socket = try LoopbackHTTPClient.connect(port: port)
                    defer { close(socket) }
                    for byte in Array("POST /x HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8) + Array(repeating: 0x61, count: 400) {
                        do { try LoopbackHTTPClient.write(socket, [byte]) } catch { return }
                        usleep(250_000)
                    }
                }
            }.get()
        }
        let answer = try await DedicatedThread.run(name: "whole-request") { LoopbackHTTPClient.readAll(whole) }
        try await slow.value
        let text = String(decoding: answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"), "the whole request was answered, not cut: \(text)")
    }

    /// The status of a POST of `size` bytes to the server on `port`.
    static func post(size: Int, port: UInt16) async throws -> Int {
        try await LoopbackHTTPClient.send(port: port, path: "/x", body: Array(repeating: 0x78, count: size)).status
    }

    @Test func largeBodiesPastTheBudgetAreAnswered503WhileSmallOnesAreServed() async throws {
        let listener = try ListeningSocket.open(ListenAddress(host: "127.0.0.1", port: 0)).socket
        let port = Self.port(of: listener)
        let budget = 60_000, free = BodyBudget.freeBytes
        let server = HTTPServer(
            limits: .init(connections: 8, connectionsPerAddress: 8, idleTimeout: .seconds(30),
                          requestTimeout: .seconds(60), maximumBodySize: 1 << 20, bodyBudget: budget),
            screen: { _ in nil }, handle: { _ in HTTPAnswer.json(200, ["ok": "yes"]) }, onDeadline: { _ in })
        try server.start(listening: listener)
        defer { server.stop(grace: .seconds(1)) }

        // A client holds part of a large body and stalls.
        let stalled = try LoopbackHTTPClient.connect(port: port)
        try LoopbackHTTPClient.write(stalled, Array("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n".utf8)
            + Array(repeating: 0x78, count: free + 50_000))
        let heldByStalled = await eventually { server.bodyBytesHeld == 50_000 }
        #expect(heldByStalled, "the stalled body holds what it read beyond its free bytes: \(server.bodyBytesHeld)")

        let large = try await Self.post(size: free + 20_000, port: port)
        #expect(large == 503, "50,000 + 20,000 is past the budget")
        let small = try await Self.post(size: 10_000, port: port)
        #expect(small == 200, "a notification's size is never the budget's")
        let fits = try await Self.post(size: free + 5_000, port: port)
        #expect(fits == 200, "50,000 + 5,000 fits")

        close(stalled)
        let givenBack = await eventually { server.bodyBytesHeld == 0 }
        #expect(givenBack, "a connection closed in the middle of its body gives its bytes back")
        let again = try await Self.post(size: free + 20_000, port: port)
        #expect(again == 200)
    }
}
