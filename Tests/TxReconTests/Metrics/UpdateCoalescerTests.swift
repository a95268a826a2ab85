import Testing
@testable import TxRecon

@Suite struct UpdateCoalescerTests {
    @Test func theFirstChangeIsWrittenAtOnce() {
        var coalescer = UpdateCoalescer(interval: .seconds(5))
        #expect(coalescer.changed(at: .seconds(100)) == .zero)
    }

    @Test func changesWhileAWriteIsScheduledScheduleNothingMore() {
        var coalescer = UpdateCoalescer(interval: .seconds(5))
        _ = coalescer.changed(at: .seconds(100))
        #expect(coalescer.changed(at: .seconds(100)) == nil)
    }

    @Test func aChangeSoonAfterAWriteWaitsForTheRestOfTheInterval() {
        var coalescer = UpdateCoalescer(interval: .seconds(5))
        _ = coalescer.changed(at: .seconds(100))
        coalescer.wrote(at: .seconds(100))
        #expect(coalescer.changed(at: .seconds(101)) == .seconds(4))
    }

    @Test func aChangeLongAfterTheLastWriteIsWrittenAtOnce() {
        var coalescer = UpdateCoalescer(interval: .seconds(5))
        _ = coalescer.changed(at: .seconds(100))
        coalescer.wrote(at: .seconds(100))
        #expect(coalescer.changed(at: .seconds(300)) == .zero)
    }
}
