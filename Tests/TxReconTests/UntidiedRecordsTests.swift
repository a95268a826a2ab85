// The failure records waiting to follow their delivered items into done/:
// moved in batches, one taken out at once when a new snapshot of its key
// comes, all of them at a stop, and urgent past the limit.
import Testing
@testable import TxRecon

@Suite struct UntidiedRecordsTests {
    static func key(_ index: Int) -> ItemKey { ItemKey("k-\(index)")! }

    @Test func recordsLeaveInBatchesAndAllAtAStop() {
        var records = UntidiedRecords()
        for index in 0..<150 { records.add(Self.key(index)) }
        #expect(records.nextBatch().count == UntidiedRecords.batchSize)
        #expect(records.count == 150 - UntidiedRecords.batchSize)
        #expect(Set(records.all()).count == 150 - UntidiedRecords.batchSize)
        #expect(records.isEmpty && records.nextBatch().isEmpty)
    }

    @Test func aNewSnapshotTakesItsKeysRecordOutFirst() {
        var records = UntidiedRecords()
        records.add(Self.key(1))
        let first = records.take(Self.key(1))
        let again = records.take(Self.key(1))
        let other = records.take(Self.key(2))
        #expect(first)
        #expect(!again, "taken once")
        #expect(!other)
    }

    @Test func pastTheLimitTheyMustMoveEvenWhileAttemptsAreDue() {
        var records = UntidiedRecords()
        for index in 0..<(UntidiedRecords.limit - 1) { records.add(Self.key(index)) }
        #expect(!records.overLimit)
        records.add(Self.key(UntidiedRecords.limit))
        #expect(records.overLimit)
    }
}
