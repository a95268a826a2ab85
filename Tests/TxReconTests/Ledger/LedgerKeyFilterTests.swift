// The ledger's key filter: never "not held" for a key added, "maybe" for
// everything until it is ready, rarely "maybe" for a key never added.
import Testing
@testable import TxRecon

@Suite struct LedgerKeyFilterTests {
    @Test func aKeyAddedIsNeverAnsweredNotHeldAndOnlyAReadyFilterSaysNo() throws {
        let filter = try #require(LedgerKeyFilter(capacity: 100_000))
        #expect(filter.mayHold(destination: "backend", key: ItemKey("never")!), "not ready: ask SQLite")
        for index in 0..<100_000 { filter.add(destination: "backend", key: ItemKey("k\(index)")!) }
        #expect(!filter.waitUntilReady(timeout: .zero), "not ready before markReady")
        filter.markReady()
        #expect(filter.waitUntilReady(timeout: .zero))
        filter.markReady()
        #expect((0..<100_000).allSatisfy { filter.mayHold(destination: "backend", key: ItemKey("k\($0)")!) })
        let maybe = (0..<100_000).filter { filter.mayHold(destination: "backend", key: ItemKey("other\($0)")!) }.count
        #expect(maybe < 2_000, "about 1 % at its capacity: \(maybe) of 100,000")
        #expect(!filter.isFull)
        filter.add(destination: "backend", key: ItemKey("one more")!)
        #expect(filter.isFull, "past its room: the service builds a bigger one")
    }

    /// A ledger of any size costs at most `maximumBytes` of filter, and a
    /// filter that large is never rebuilt for being full: a bigger one
    /// cannot be had.
    @Test func aFilterForMoreKeysThanItsMemoryAllowsIsBoundedAndNeverRebuilt() throws {
        let keys = LedgerKeyFilter.maximumBytes * 8 / LedgerKeyFilter.bitsPerKey * 4
        let filter = try #require(LedgerKeyFilter(capacity: keys))
        #expect(filter.memoryBytes == LedgerKeyFilter.maximumBytes)
        for index in 0..<20_000 { filter.add(destination: "backend", key: ItemKey("k\(index)")!) }
        filter.markReady()
        #expect((0..<20_000).allSatisfy { filter.mayHold(destination: "backend", key: ItemKey("k\($0)")!) })
        let small = try #require(LedgerKeyFilter(capacity: 1_000))
        #expect(small.memoryBytes < LedgerKeyFilter.maximumBytes)
        for index in 0..<1_001 { small.add(destination: "backend", key: ItemKey("k\(index)")!) }
        #expect(small.isFull)
        let capped = try #require(LedgerKeyFilter(capacity: 1_000, maximumBytes: 1_024))
        #expect(capped.memoryBytes == 1_024)
        for index in 0..<1_001 { capped.add(destination: "backend", key: ItemKey("k\(index)")!) }
        #expect(!capped.isFull, "as large as it may be: building it again would change nothing")
    }
}
