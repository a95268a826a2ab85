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
        #expect(budget.take(600))
        #expect(!budget.take(401), "600 + 401 is past 1000")
        #expect(budget.inUse == 600, "a refused take takes nothing")
        #expect(budget.take(400))
        budget.give(600)
        #expect(budget.take(600))
        #expect(budget.inUse == 1000)
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

    @Test func aBodyPastTheBudgetIsAnswered503AndItsBytesComeBack() async throws {
        let listener = try ListeningSocket.open(ListenAddress(host: "127.0.0.1", port: 0)).socket
        let port = RequestDeadlineTests.port(of: listener)
        let server = HTTPServer(
            limits: .init(connections: 8, connectionsPerAddress: 8, idleTimeout: .seconds(10),
                          requestTimeout: .seconds(30), maximumBodySize: 1 << 20, bodyBudget: 100_000),
            screen: { _ in nil }, handle: { _ in HTTPAnswer.json(200, ["ok": "yes"]) }, onDeadline: { _ in })
        try server.start(listening: listener)
        defer { server.stop(grace: .seconds(1)) }
        let refused = try await Self.post(size: 150_000, port: port)
        #expect(refused == "HTTP/1.1 503 Service Unavailable", "under MaxFileSize=, past the budget")
        for _ in 0..<3 {
            let served = try await Self.post(size: 80_000, port: port)
            #expect(served == "HTTP/1.1 200 OK", "each ended request gave its bytes back")
        }
    }
}
