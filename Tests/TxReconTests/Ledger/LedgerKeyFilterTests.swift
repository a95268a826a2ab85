// The ledger's key filter: never "not held" for a key added, "maybe" for
// everything until it is ready, rarely "maybe" for a key never added.
import Testing
@testable import TxRecon

@Suite struct LedgerKeyFilterTests {
    @Test func aKeyAddedIsNeverAnsweredNotHeldAndOnlyAReadyFilterSaysNo() {
        let filter = LedgerKeyFilter(capacity: 100_000)
        #expect(filter.mayHold(destination: "backend", key: ItemKey("never")!), "not ready: ask SQLite")
        for index in 0..<100_000 { filter.add(destination: "backend", key: ItemKey("k\(index)")!) }
        filter.markReady()
        #expect((0..<100_000).allSatisfy { filter.mayHold(destination: "backend", key: ItemKey("k\($0)")!) })
        let maybe = (0..<100_000).filter { filter.mayHold(destination: "backend", key: ItemKey("other\($0)")!) }.count
        #expect(maybe < 2_000, "about 1 % at its capacity: \(maybe) of 100,000")
        #expect(!filter.isFull)
        filter.add(destination: "backend", key: ItemKey("one more")!)
        #expect(filter.isFull, "past its room: the service builds a bigger one")
    }
}
