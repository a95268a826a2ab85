// RequestTimeout='s bookkeeping on a clock the test moves: a connection past
// its deadline is cut (its socket shut down), one whose whole request is
// being handled is not, however late, and its clock starts again for the
// answer. Sockets are the two ends of socketpairs, so a cut shows as the
// other end reading the end of the stream.
import Glibc
import Synchronization
import Testing
@testable import TxRecon

@Suite struct RequestDeadlinesTests {
    final class TestClock: Sendable {
        let start = ContinuousClock.now
        private let offset = Mutex<Duration>(.zero)
        var now: ContinuousClock.Instant { start + offset.withLock { $0 } }
        func advance(by duration: Duration) { offset.withLock { $0 += duration } }
    }

    /// A connected pair: the server's end, which a cut shuts down, and the client's.
    static func socketPair() -> (server: Int32, client: Int32) {
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        return (ends[0], ends[1])
    }

    /// Whether the server's end was shut down: the client reads the end of
    /// the stream at once instead of finding nothing to read.
    static func wasCut(_ pair: (server: Int32, client: Int32)) -> Bool {
        var byte: UInt8 = 0
        return recv(pair.client, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test func aRequestBeingHandledIsNotCutPastItsDeadlineAndItsAnswerGetsAFreshOne() {
        let clock = TestClock()
        let deadlines = RequestDeadlines(timeout: .seconds(30), now: { clock.now })
        let handled = Self.socketPair(), slow = Self.socketPair()
        defer { for end in [handled.server, handled.client, slow.server, slow.client] { close(end) } }
        let handledConnection = OpaquePointer(bitPattern: 0x10)!, slowConnection = OpaquePointer(bitPattern: 0x20)!
        deadlines.started(connection: handledConnection, socket: handled.server, client: "192.0.2.1")
        deadlines.started(connection: slowConnection, socket: slow.server, client: "192.0.2.2")
        deadlines.requestStarted(connection: handledConnection)

        let cutWhileHandled = deadlines.handling(connection: handledConnection) { () -> [String] in
            clock.advance(by: .seconds(31))
            return deadlines.cutOverdue()
        }
        #expect(cutWhileHandled == ["192.0.2.2"], "only the connection with no whole request is cut")
        #expect(Self.wasCut(slow))
        #expect(!Self.wasCut(handled), "the handled request keeps its connection")

        clock.advance(by: .seconds(29))
        #expect(deadlines.cutOverdue().isEmpty, "the answer has RequestTimeout= from the handling's end")
        clock.advance(by: .seconds(2))
        #expect(deadlines.cutOverdue() == ["192.0.2.1"], "an answer never taken is cut in the end")
        #expect(Self.wasCut(handled))
    }
}
