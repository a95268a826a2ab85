import Testing
@testable import TxRecon

@Suite struct ArrivalOrderTests {
    private func key(_ name: String) -> ItemKey { ItemKey(name)! }

    @Test func theOldestIsTheEarliestArrivalStillQueued() {
        var order = ArrivalOrder()
        var queued: [ItemKey: Int64] = [key("a"): 300, key("b"): 100, key("c"): 200]
        for (key, time) in queued { order.note(key, receivedAt: time) }
        #expect(order.oldest(queued: queued.count) { queued[$0] } == 100)
        queued[key("b")] = nil
        #expect(order.oldest(queued: queued.count) { queued[$0] } == 200)
    }

    @Test func aKeyThatArrivedAgainCountsFromItsNewArrival() {
        var order = ArrivalOrder()
        var queued: [ItemKey: Int64] = [key("a"): 100, key("b"): 200]
        order.note(key("a"), receivedAt: 100)
        order.note(key("b"), receivedAt: 200)
        queued[key("a")] = 300
        order.note(key("a"), receivedAt: 300)
        #expect(order.oldest(queued: queued.count) { queued[$0] } == 200)
    }

    @Test func anEmptyQueueHasNoOldest() {
        var order = ArrivalOrder()
        order.note(key("a"), receivedAt: 100)
        #expect(order.oldest(queued: 0) { _ in nil } == nil)
    }

    @Test func pilesOfStaleArrivalsBehindAStuckItemDoNotChangeTheAnswer() {
        var order = ArrivalOrder()
        var queued: [ItemKey: Int64] = [key("stuck"): 1]
        order.note(key("stuck"), receivedAt: 1)
        for index in 0..<5000 {
            let passing = key("k\(index)")
            order.note(passing, receivedAt: Int64(10 + index))
            #expect(order.oldest(queued: queued.count + 1) { $0 == passing ? Int64(10 + index) : queued[$0] } == 1)
        }
        queued[key("stuck")] = nil
        queued[key("last")] = 9000
        order.note(key("last"), receivedAt: 9000)
        #expect(order.oldest(queued: queued.count) { queued[$0] } == 9000)
    }
}
