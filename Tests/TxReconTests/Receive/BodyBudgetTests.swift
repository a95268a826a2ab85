// The bytes of request bodies the receiver holds at once: taken as a body
// arrives, refused past the limit, given back when its request ends; and
// through libmicrohttpd on loopback, a body past the budget answered 503
// while the next one, once the first has ended, is served.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct BodyBudgetTests {
    @Test func bytesAreTakenUpToTheLimitAndGivenBack() {
        let budget = BodyBudget(limit: 1000)
        #expect(budget.take(600, from: "192.0.2.1"))
        #expect(!budget.take(401, from: "192.0.2.1"), "600 + 401 is past 1000")
        #expect(budget.inUse == 600, "a refused take takes nothing")
        #expect(budget.take(400, from: "192.0.2.1"))
        budget.give(600, from: "192.0.2.1")
        #expect(budget.take(600, from: "192.0.2.1"))
        #expect(budget.inUse == 1000)
    }

    @Test func oneAddressHoldsNoMoreThanItsShareOfTheConnections() {
        // 8 connections, 2 from one address: a quarter of the budget each.
        let budget = BodyBudget(limit: 1000, connections: 8, connectionsPerAddress: 2)
        #expect(budget.take(200, from: "192.0.2.1"))
        #expect(!budget.take(100, from: "192.0.2.1"), "200 + 100 is past its 250")
        #expect(budget.take(250, from: "192.0.2.2"), "another address has a share of its own")
        budget.give(200, from: "192.0.2.1")
        #expect(budget.take(250, from: "192.0.2.1"), "given back, the share is free again")
        #expect(budget.inUse == 500)
    }

    @Test func theBudgetHoldsTwoLargestBodiesAndNeverLessThan64MiB() {
        #expect(BodyBudget.limit(forMaximumBodySize: 1 << 20) == 64 << 20)
        #expect(BodyBudget.limit(forMaximumBodySize: 100 << 20) == 200 << 20)
        #expect(BodyBudget.limit(forMaximumBodySize: Int.max) == Int.max, "no overflow trap")
    }

    /// A POST of `size` bytes to the server on `port`; the answer's status line.
    static func post(size: Int, port: UInt16) async throws -> String {
        let answer = try await DedicatedThread.run(name: "post") { () -> Result<[UInt8], LoopbackHTTPClient.Failure> in
            Result { () throws(LoopbackHTTPClient.Failure) in
                let socket = try LoopbackHTTPClient.connect(port: port)
                defer { close(socket) }
                try LoopbackHTTPClient.write(socket, Array(("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\n"
                    + "Connection: close\r\n\r\n").utf8) + Array(repeating: 0x78, count: size))
                return LoopbackHTTPClient.readAll(socket)
            }
        }.get()
        return String(decoding: answer.prefix { $0 != 0x0D }, as: UTF8.self)
    }

    @Test func largeBodiesPastTheBudgetAreAnswered503WhileSmallOnesAreServed() async throws {
        let listener = try ListeningSocket.open(ListenAddress(host: "127.0.0.1", port: 0)).socket
        let port = RequestDeadlineTests.port(of: listener)
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
        let heldByStalled = await Self.eventually { server.bodyBytesHeld == 50_000 }
        #expect(heldByStalled, "the stalled body holds what it read beyond its free bytes: \(server.bodyBytesHeld)")

        let large = try await Self.post(size: free + 20_000, port: port)
        #expect(large == "HTTP/1.1 503 Service Unavailable", "50,000 + 20,000 is past the budget")
        let small = try await Self.post(size: 10_000, port: port)
        #expect(small == "HTTP/1.1 200 OK", "a notification's size is never the budget's")
        let fits = try await Self.post(size: free + 5_000, port: port)
        #expect(fits == "HTTP/1.1 200 OK", "50,000 + 5,000 fits")

        close(stalled)
        let givenBack = await Self.eventually { server.bodyBytesHeld == 0 }
        #expect(givenBack, "a connection closed in the middle of its body gives its bytes back")
        let again = try await Self.post(size: free + 20_000, port: port)
        #expect(again == "HTTP/1.1 200 OK")
    }

    /// Whether `condition` holds within 30 s, asked every 10 ms.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
