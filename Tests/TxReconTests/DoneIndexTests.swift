// DoneIndex: never "no" for a key delivered into done/ (a wrong "no" would
// let an older snapshot be delivered after a newer one), and "maybe" rarely
// for the rest (each costs a lookup in done/).
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite
struct DoneIndexTests {
    private func keys(_ prefix: String, _ count: Int) -> [ItemKey] {
        (0..<count).map { ItemKey("\(prefix)\($0)")! }
    }

    @Test func anEmptyIndexHoldsNoKey() {
        let index = DoneIndex()
        #expect(keys("k", 1000).allSatisfy { !index.mayContain($0) })
    }

    @Test func everyKeyAddedIsReported() {
        let index = DoneIndex()
        let added = keys("2000001", 50_000)
        for key in added { index.add(key) }
        #expect(added.allSatisfy { index.mayContain($0) })
    }

    @Test func keysNeverAddedAreRarelyReported() {
        let index = DoneIndex()
        for key in keys("delivered-", 50_000) { index.add(key) }
        let wrong = keys("other-", 50_000).filter { index.mayContain($0) }.count
        #expect(wrong < 50, "false positives: \(wrong) of 50,000")
    }

    @Test func theSpoolIndexesDeliveredKeysButNotSupersededSnapshots() throws {
        let harness = try EngineHarness()
        let delivered = ItemKey("a b")!, supersededOnly = ItemKey("c")!
        for name in [delivered.fileName, "\(delivered.fileName).superseded-1-0", "\(supersededOnly.fileName).superseded-2-0"] {
            try SystemCall.writeNewFile(harness.layout.done + "/" + name, Array("{}".utf8), sync: false)
        }
        let index = DoneIndex()
        try harness.spool.indexDelivered(into: index)
        #expect(index.mayContain(delivered))
        #expect(!index.mayContain(supersededOnly))
    }

    // MARK: - The engine's index, built off its thread

    /// A harness whose first engine delivered a:7 into done/ and stopped.
    private static func harnessWithADeliveredBeforeARestart() async throws -> EngineHarness {
        let harness = try EngineHarness()
        let first = try await harness.startedEngine()
        await first.offer([try harness.envelope("a", version: 7)])
        await harness.status.waitFor { $0.delivered == 1 }
        await first.stop()
        return harness
    }

    @Test func theEngineStartsWithoutWaitingForTheListingAndReadsDoneMeanwhile() async throws {
        let harness = try await Self.harnessWithADeliveredBeforeARestart()

        let gate = Gate()
        let second = harness.makeEngine(doneIndexArrivesAfter: gate)
        try await second.start()
        #expect(await !second.hasDoneIndex)
        await second.offer([try harness.envelope("a", version: 7)])
        // The second engine counts from zero: a wrong delivery ends the wait too.
        let status = await harness.status.waitFor { $0.superseded == 1 || $0.delivered == 1 }
        #expect(status.superseded == 1, "done/a read while the index is still being built")
        #expect(harness.transport.requests.count == 1)
        await gate.open()
        await second.waitForDoneIndex()
        #expect(await second.hasDoneIndex)
    }

    @Test func aKeyDeliveredWhileDoneIsListedIsInTheIndexThatArrives() async throws {
        let harness = try EngineHarness()
        let gate = Gate()
        // The listing happens at start, while done/ is still empty: it
        // misses a, delivered before the index arrives.
        let engine = harness.makeEngine(doneIndexArrivesAfter: gate)
        try await engine.start()
        await engine.offer([try harness.envelope("a", version: 7)])
        await harness.status.waitFor { $0.delivered == 1 }
        await gate.open()
        await engine.waitForDoneIndex()
        #expect(await engine.hasDoneIndex)

        await engine.offer([try harness.envelope("a", version: 7)])
        let status = await harness.status.waitFor { $0.superseded == 1 || $0.delivered == 2 }
        #expect(status.superseded == 1, "the index that arrived knows a, so done/a was read")
        #expect(harness.transport.requests.count == 1)
        await engine.stop()
    }

    @Test func aListingThatFailsIsReportedOnceAndDoneIsReadInstead() async throws {
        let harness = try await Self.harnessWithADeliveredBeforeARestart()

        let second = harness.makeEngineWhoseDoneListingFails()
        try await second.start()
        await second.waitForDoneIndex()
        #expect(await !second.hasDoneIndex)
        let warnings = harness.log.entries.filter { $0.message.hasPrefix("cannot list done/") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.contains("Permission denied") == true)
        await second.offer([try harness.envelope("a", version: 7), try harness.envelope("b", version: 1)])
        // The second engine counts from zero: b, and a:7 only if wrongly delivered.
        let status = await harness.status.waitFor { $0.superseded == 1 && $0.delivered == 1 || $0.delivered == 2 }
        #expect(status.superseded == 1, "a:7 was checked against done/a by reading it")
        await second.stop()
    }
}
