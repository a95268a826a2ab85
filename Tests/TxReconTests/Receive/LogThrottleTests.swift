// The receiver's throttle of repeated refusals' log entries, on given
// instants: one a second per subject, with the count left out in between.
import Testing
@testable import TxRecon

@Suite struct LogThrottleTests {
    @Test func oneEntryASecondPerSubjectThenTheCountLeftOut() {
        let throttle = LogThrottle()
        let start = ContinuousClock.now
        #expect(throttle.admit("10.0.0.1 429", now: start) == 0)
        #expect(throttle.admit("10.0.0.1 429", now: start + .milliseconds(10)) == nil)
        #expect(throttle.admit("10.0.0.1 429", now: start + .milliseconds(500)) == nil)
        #expect(throttle.admit("10.0.0.2 429", now: start + .milliseconds(500)) == 0, "another client, its own second")
        #expect(throttle.admit("10.0.0.1 401", now: start + .milliseconds(500)) == 0, "another answer, its own second")
        #expect(throttle.admit("10.0.0.1 429", now: start + .milliseconds(1001)) == 2, "the two left out are counted")
        #expect(throttle.admit("10.0.0.1 429", now: start + .seconds(5)) == 0)
    }

    @Test func subjectsBeyondTheTableAreThrottledAsOne() {
        let throttle = LogThrottle(capacity: 1)
        let start = ContinuousClock.now
        #expect(throttle.admit("10.0.0.1 429", now: start) == 0)
        #expect(throttle.admit("10.0.0.2 429", now: start) == 0, "the first newcomer is logged")
        #expect(throttle.admit("10.0.0.3 429", now: start + .milliseconds(1)) == nil, "the next shares its second")
        #expect(throttle.admit("10.0.0.4 429", now: start + .milliseconds(1001)) == 1)
    }
}
