// SystemClock.sleep against the real clock, which the engine's retry timer
// uses: it must not return before its deadline, and must end at once when
// its task is cancelled (a retry pulled in early).
import Testing
@testable import TxRecon

@Suite struct SystemClockTimingTests {
    @Test func aSleepDoesNotEndBeforeItsDeadline() async throws {
        let clock = SystemClock()
        let deadline = clock.now + .milliseconds(100)
        try await clock.sleep(until: deadline)
        #expect(clock.now >= deadline)
    }

    @Test func aSleepInThePastReturnsAtOnce() async throws {
        let clock = SystemClock()
        let started = clock.now
        try await clock.sleep(until: started - .seconds(1))
        #expect(clock.now - started < .seconds(1))
    }

    @Test func cancellingASleepEndsItAtOnceWithCancellationError() async {
        let clock = SystemClock()
        let started = clock.now
        let sleeper = Task { try await clock.sleep(until: clock.now + .seconds(60)) }
        sleeper.cancel()
        let result = await sleeper.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(clock.now - started < .seconds(30))
    }
}
