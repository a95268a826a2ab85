// HandoffQueue's timed take against the real clock: it must sleep until the
// timeout (an engine thread that spins instead burns a core while idle) and
// return an element as soon as one is put.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct HandoffQueueTimingTests {
    @Test func aTimedTakeOnAnEmptyQueueWaitsOutItsTimeout() async {
        let queue = HandoffQueue<Int>()
        let clock = ContinuousClock()
        let started = clock.now
        let taken = await BlockingWork.run { queue.take(timeout: { .milliseconds(100) }) }
        guard case .timedOut = taken else {
            Issue.record("expected a timeout, got \(taken)")
            return
        }
        #expect(clock.now - started >= .milliseconds(100))
    }

    @Test func aTimedTakeReturnsAnElementPutMeanwhile() async {
        let queue = HandoffQueue<Int>()
        async let taken = BlockingWork.run { queue.take(timeout: { .seconds(30) }) }
        _ = queue.put(7)
        guard case .element(7) = await taken else {
            Issue.record("the element was not returned")
            return
        }
    }

    @Test func theTimeoutIsAskedOnlyWhenNothingWaitsAndAZeroOneDoesNotWait() async {
        let queue = HandoffQueue<Int>()
        _ = queue.put(1)
        var asked = 0
        guard case .element(1) = queue.take(timeout: { asked += 1; return .seconds(30) }) else {
            Issue.record("the waiting element was not returned")
            return
        }
        #expect(asked == 0)
        guard case .timedOut = queue.take(timeout: { asked += 1; return .zero }) else {
            Issue.record("a zero timeout on an empty queue did not return at once")
            return
        }
        #expect(asked == 1)
    }
}
