// The STATUS= line and the status file `txrecon status` reads.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct StatusPublisherTests {
    let directory = TemporaryDirectory("txrecon-status")

    func written(_ path: String) throws -> JSONValue {
        try JSONValue.parse(SystemCall.readFile(path, limit: 1 << 20))
    }

    /// The file carries figures the line does not (delivered, the ledger's
    /// pending confirmations): a change of those alone must reach it, or
    /// `txrecon status` shows a drain's last figures for good.
    @Test func aChangeTheLineDoesNotShowIsWrittenAndTheLineIsNotSentAgain() throws {
        let health = RecordingHealthNotifier()
        let path = directory.path + "/txrecon.status"
        let publisher = StatusPublisher(health: health, statusFile: path, startedAt: 0, log: RecordingLogSink())
        var status = DaemonStatus(EngineStatus())
        status.ledger = LedgerService.Status(path: "/ledger.sqlite3")
        status.ledger?.pending = 5
        publisher.publish(status)
        publisher.flushNow()
        #expect(try written(path)["ledger"]?["pending"] == .integer(5))
        let lines = health.notifications.count
        let line = status.line
        status.ledger?.pending = 0
        status.destinations[0].status.delivered = 1
        #expect(status.line == line, "the premise: the line shows neither")
        publisher.publish(status)
        publisher.flushNow()
        #expect(try written(path)["ledger"]?["pending"] == .integer(0))
        #expect(try written(path)["delivered"] == .integer(1))
        #expect(health.notifications.count == lines, "the same STATUS= line is not sent again")
    }
}
