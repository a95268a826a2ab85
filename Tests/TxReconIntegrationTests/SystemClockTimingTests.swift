// SystemClock's timers against the real clock, which the engine's retry
// timer, status flush and stop grace use (kept by the engine's thread,
// ThreadExecutor.schedule, which waits for them in epoll_wait): a timer
// must not fire before its deadline (the loop sleeps until it, where a
// loop that spins burns a core while idle), one in the past fires at
// once, a cancelled one never fires (a retry pulled in early leaves no
// wake-up behind at the old time), and work put while the loop waits for
// a late timer runs at once.
import Synchronization
import Testing
@testable import TxRecon

@Suite(.timeLimit(.minutes(1)))
struct SystemClockTimingTests {
    let clock = SystemClock()

    /// Waits until the timer set for `deadline` fires; the clock then.
    func fire(at deadline: Duration, on executor: ThreadExecutor) async -> Duration {
        await withCheckedContinuation { (fired: CheckedContinuation<Duration, Never>) in
            _ = clock.schedule(at: deadline, on: executor) { [clock] in fired.resume(returning: clock.now) }
        }
    }

    @Test func aTimerDoesNotFireBeforeItsDeadline() async throws {
        let executor = try ThreadExecutor(name: "txr-test-clock")
        defer { executor.shutdown() }
        let deadline = clock.now + .milliseconds(100)
        #expect(await fire(at: deadline, on: executor) >= deadline)
    }

    @Test func aTimerInThePastFiresAtOnce() async throws {
        let executor = try ThreadExecutor(name: "txr-test-clock")
        defer { executor.shutdown() }
        let started = clock.now
        #expect(await fire(at: started - .seconds(1), on: executor) - started < .seconds(1))
    }

    @Test func aCancelledTimerNeverFiresWhileALaterOneDoes() async throws {
        let executor = try ThreadExecutor(name: "txr-test-clock")
        defer { executor.shutdown() }
        let fired = Atomic<Bool>(false)
        let cancelled = clock.schedule(at: clock.now + .milliseconds(20), on: executor) {
            fired.store(true, ordering: .relaxed)
        }
        cancelled.cancel()
        _ = await fire(at: clock.now + .milliseconds(60), on: executor)
        let wasFired = fired.load(ordering: .relaxed)
        #expect(!wasFired)
    }

    @Test func workPutWhileTheLoopWaitsForALateTimerRunsAtOnce() async throws {
        let loop = try ThreadExecutor(name: "txr-test-wake")
        defer { loop.shutdown() }
        let timerFired = Atomic<Bool>(false)
        let timer = loop.schedule(at: clock.now + .seconds(30)) { timerFired.store(true, ordering: .relaxed) }
        defer { timer.cancel() }
        // The suite's time limit fails this if the loop slept on to its timer.
        await withCheckedContinuation { (ran: CheckedContinuation<Void, Never>) in loop.submit { ran.resume() } }
        let fired = timerFired.load(ordering: .relaxed)
        #expect(!fired)
    }
}
