// DeliveredKeysTests: the engine's knowledge of what done/ may hold, event
// by event: nothing is ruled out before an index exists, keys delivered
// while it is built are in it when it arrives, a failed build keeps the old
// one, and a full index asks to be rebuilt.
import Testing
@testable import TxRecon

@Suite struct DeliveredKeysTests {
    let a = ItemKey("a")!, b = ItemKey("b")!, c = ItemKey("c")!

    @Test func withoutAnIndexEveryKeyMayBeInDone() {
        var keys = DeliveredKeys()
        #expect(keys.mayHold(a))
        let rebuild = keys.delivered(a)
        #expect(!rebuild, "no index: nothing to rebuild")
        #expect(keys.mayHold(b))
    }

    @Test func keysDeliveredWhileTheIndexIsBuiltAreInItWhenItArrives() {
        var keys = DeliveredKeys()
        let first = keys.buildStarts(), second = keys.buildStarts()
        #expect(first && !second, "one build at a time")
        _ = keys.delivered(a)
        keys.built(DoneIndex())
        #expect(!keys.isBuilding)
        #expect(keys.mayHold(a), "delivered during the build")
        #expect(!keys.mayHold(b), "never delivered: ruled out")
        _ = keys.delivered(c)
        #expect(keys.mayHold(c))
    }

    @Test func aFailedBuildKeepsTheOlderIndexAndForgetsTheKeysItWasToAdd() {
        var keys = DeliveredKeys()
        _ = keys.buildStarts()
        keys.built(DoneIndex())
        _ = keys.delivered(a)
        let started = keys.buildStarts()
        #expect(started)
        _ = keys.delivered(b)
        keys.buildFailed()
        #expect(!keys.isBuilding && keys.index != nil)
        #expect(keys.mayHold(a) && keys.mayHold(b), "the older index took both as they were delivered")
        #expect(!keys.mayHold(c))
    }

    @Test func anIndexThatTookItsCapacityAsksToBeRebuilt() {
        var keys = DeliveredKeys()
        _ = keys.buildStarts()
        keys.built(DoneIndex())
        var asked = 0
        for number in 0..<DoneIndex.capacity where keys.delivered(ItemKey(String(number))!) { asked += 1 }
        #expect(asked == 1, "once, at the capacity-th delivery")
    }
}
