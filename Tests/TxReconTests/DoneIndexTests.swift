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
}
