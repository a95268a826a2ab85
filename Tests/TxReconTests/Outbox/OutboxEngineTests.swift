// OutboxEngineTests: the engine with an AnswerTaker: an item that owes
// Apple an answer reaches done/ only after its entry is durable in the
// outbox, stays queued when the entry cannot be written, and a consumption
// request still unconfirmed near its deadline is warned about once. Manual
// clock, scripted transport.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1)))
struct OutboxEngineTests {
    private static func settings(finish: Bool) -> (Outbox) -> AnswerTaker.Settings? {
        { outbox in
            AnswerTaker.Settings(outbox: outbox, answeringDestination: Destination.primaryName,
                                 finishTransactions: finish, destinations: [(Destination.primaryName, DestinationMatch())])
        }
    }

    /// A CONSUMPTION_REQUEST Apple signed at `signedAt` (ms since 1970), written into new/.
    private func request(_ harness: EngineHarness, signedAt: Int64) throws -> Drop {
        let transaction = TestJWS.make(payload: TestJWS.transactionPayload(signedDate: signedAt - 1000))
        let payload = TestJWS.notificationPayload(notificationType: "CONSUMPTION_REQUEST", signedDate: signedAt,
                                                  signedTransactionInfo: transaction)
        return try drop("{\"signedPayload\":\"\(TestJWS.make(payload: payload))\"}", harness)
    }

    private func drop(_ input: String, _ harness: EngineHarness) throws -> Drop {
        let name = "drop-\(UInt32.random(in: 0...UInt32.max))"
        try SystemCall.writeNewFile(harness.layout.new + "/" + name, Array(input.utf8), sync: false)
        guard case .item(let item) = try InputDecoder().decode(Array(input.utf8)) else {
            throw OutboxEntryError("not one item")
        }
        return Drop(name: name, item: item, receivedAt: harness.clock.wallMilliseconds)
    }

    @Test func theBackendsConsumptionInformationIsInTheOutboxOnceTheItemIsDone() async throws {
        let answer = #"{"consumptionInformation":{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}}"#
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(200, body: answer)),
                                        answers: Self.settings(finish: false))
        let engine = try await harness.startedEngine()
        let signedAt = harness.clock.wallMilliseconds - 60_000
        await engine.offer([try request(harness, signedAt: signedAt)])
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "done") == ["2000000123456789"])
        #expect(harness.names(in: "outbox/new") == ["consumption.Sandbox.2000000123456789.\(signedAt).json"])
        #expect(harness.transport.requests.first?.keepsAnswer == true, "the 2xx body is asked for")
        #expect(harness.log.entries(withMessageID: MessageID.answerQueued).count == 1)
    }

    @Test func anItemWhoseEntryCannotBeWrittenStaysAndIsDeliveredAgain() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(200)),
                                        answers: Self.settings(finish: true))
        let engine = try await harness.startedEngine()
        #expect(rmdir(harness.layout.root + "/outbox/tmp") == 0)
        let start = harness.clock.now
        let purchase = TestJWS.make(payload: TestJWS.transactionPayload(signedDate: harness.clock.wallMilliseconds))
        await engine.offer([try drop(purchase, harness)])
        await harness.clock.waitForSleeper(until: start + .seconds(2))
        #expect(harness.names(in: "done") == [], "not finished without its answer")
        #expect(harness.names(in: "outbox/new") == [])
        #expect(harness.log.entries.contains { $0.message.contains("could not be written into the outbox") })
        // The outbox is back: the next attempt delivers it again, and answers.
        #expect(mkdir(harness.layout.root + "/outbox/tmp", 0o750) == 0)
        _ = harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "done") == ["2000000123456789"])
        #expect(harness.names(in: "outbox/new") == ["finish.Sandbox.2000000123456789.json"])
        #expect(harness.transport.requests.count == 2)
    }

    @Test func aRequestNotConfirmedNearItsDeadlineIsWarnedAboutOnce() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(503)),
                                        answers: Self.settings(finish: false))
        let engine = try await harness.startedEngine()
        let warning = OutboxSettings().consumptionDeadlineWarning
        let signedAt = harness.clock.wallMilliseconds - warning.milliseconds + 1000
        let start = harness.clock.now
        await engine.offer([try request(harness, signedAt: signedAt)])
        // The first failure, a second before the warning's time: nothing said.
        await harness.clock.waitForSleeper(until: start + .seconds(2))
        #expect(harness.log.entries(withMessageID: MessageID.consumptionDeadline).isEmpty)
        _ = harness.clock.advance(by: .seconds(2))
        await harness.clock.waitForSleeper(until: start + .seconds(2 + 5))
        let warned = harness.log.entries(withMessageID: MessageID.consumptionDeadline)
        #expect(warned.count == 1)
        #expect(warned.first?.field("TXRECON_DEADLINE") == Timestamp.rfc3339(milliseconds: signedAt + 12 * 3_600_000))
        _ = harness.clock.advance(by: .seconds(5))
        await harness.clock.waitForSleeper(until: start + .seconds(2 + 5 + 15))
        #expect(harness.log.entries(withMessageID: MessageID.consumptionDeadline).count == 1, "once per request")
        #expect(harness.status.latest?.statistics.consumptionDeadlineWarnings == 1)
    }
}
