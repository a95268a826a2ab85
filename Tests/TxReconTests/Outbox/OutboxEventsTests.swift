// OutboxEventsTests: the journal entries of what a delivered item wrote
// into the outbox name its app (TXRECON_APP), as every other entry of the
// item does, so that `journalctl TXRECON_APP=NAME` shows an app's answers.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct OutboxEventsTests {
    @Test func eachOutboxEntryOfAnItemNamesItsApp() {
        let log = RecordingLogSink()
        let events = ItemEvents(sink: log)
        let written = events.outbox(ItemKey("7001")!, [.wrote("finish.Sandbox.7001.json"),
                                                      .awaitingDestinations("finish.Sandbox.7001.json", ["analytics"]),
                                                      .ignored("no consumptionInformation")], app: "two")
        #expect(written == 1)
        #expect(log.entries.count == 3)
        #expect(log.entries.allSatisfy { $0.fields.contains { $0 == ("TXRECON_APP", "two") } })
        _ = events.outbox(ItemKey("7002")!, [.wrote("finish.Sandbox.7002.json")], app: nil)
        #expect(!(log.entries.last?.fields.contains { $0.0 == "TXRECON_APP" } ?? true), "an item of no app names none")
    }
}
