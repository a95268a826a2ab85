// The event loop's wait (ThreadExecutor's epoll_wait) against the real
// clock: it sleeps until its earliest timer (a loop that spins instead
// burns a core while idle), wakes at once for work put meanwhile, and does
// not wait for a timer already due. (These were HandoffQueue's timed take,
// which the engine's thread waited in before it became an event loop.)
import Synchronization
import Testing
@testable import TxRecon

@Suite(.timeLimit(.minutes(1)))
struct EventLoopTimingTests {
    @Test func anIdleLoopWaitsOutItsTimer() async throws {
        let loop = try ThreadExecutor(name: "txr-test-idle")
        defer { loop.shutdown() }
        let clock = SystemClock()
        let started = clock.now
        let firedAt = await withCheckedContinuation { (fired: CheckedContinuation<Duration, Never>) in
            _ = loop.schedule(at: started + .milliseconds(100)) { fired.resume(returning: clock.now) }
        }
        #expect(firedAt - started >= .milliseconds(100))
    }

    @Test func workPutWhileTheLoopWaitsForALateTimerRunsAtOnce() async throws {
        let loop = try ThreadExecutor(name: "txr-test-wake")
        defer { loop.shutdown() }
        let timerFired = Atomic<Bool>(false)
        let timer = loop.schedule(at: SystemClock().now + .seconds(30)) { timerFired.store(true, ordering: .relaxed) }
        defer { timer.cancel() }
        // The suite's time limit fails this if the loop slept on to its timer.
        await withCheckedContinuation { (ran: CheckedContinuation<Void, Never>) in loop.submit { ran.resume() } }
        let fired = timerFired.load(ordering: .relaxed)
        #expect(!fired)
    }

    @Test func aTimerAlreadyDueOnAnIdleLoopFiresWithoutWaiting() async throws {
        let loop = try ThreadExecutor(name: "txr-test-due")
        defer { loop.shutdown() }
        let clock = SystemClock()
        let started = clock.now
        let firedAt = await withCheckedContinuation { (fired: CheckedContinuation<Duration, Never>) in
            _ = loop.schedule(at: started - .seconds(1)) { fired.resume(returning: clock.now) }
        }
        // Well under a second: it did not wait for anything.
        #expect(firedAt - started < .seconds(1))
    }
}
