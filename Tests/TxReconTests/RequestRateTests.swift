// MaxRate='s token bucket, on a clock the test moves.
import Testing
@testable import TxRecon

@Suite struct RequestRateTests {
    /// Starts as many requests as the bucket allows from `start` for
    /// `seconds`, each as soon as it may; returns their start times.
    static func starts(_ rate: inout RequestRate, from start: Duration, for seconds: Int) -> [Duration] {
        var now = start
        var started: [Duration] = []
        let end = start + .seconds(seconds)
        while true {
            now = rate.nextRequest(now: now)
            guard now < end else { return started }
            rate.take(now: now)
            started.append(now)
        }
    }

    @Test func aBacklogStartsWithOneSecondsBurstAndThenKeepsTheRate() {
        var rate = RequestRate(perSecond: 50)
        let started = Self.starts(&rate, from: .seconds(100), for: 10)
        #expect(started.prefix(50).allSatisfy { $0 == .seconds(100) }, "one second's worth at once")
        // 50 at once, then one every 20 ms for the rest of the 10 s.
        #expect((548...550).contains(started.count))
        let lastSecond = started.filter { $0 >= .seconds(109) }
        #expect((49...51).contains(lastSecond.count))
    }

    @Test func aRateBelowOneASecondSpacesRequestsOut() {
        var rate = RequestRate(perSecond: 0.5)
        let started = Self.starts(&rate, from: .zero, for: 10)
        #expect(started == [.zero, .seconds(2), .seconds(4), .seconds(6), .seconds(8)])
    }

    @Test func idleTimeSavesUpNoMoreThanOneSecondsWorth() {
        var rate = RequestRate(perSecond: 10)
        _ = Self.starts(&rate, from: .zero, for: 1)
        let afterIdle = Self.starts(&rate, from: .seconds(3600), for: 1)
        #expect(afterIdle.filter { $0 == .seconds(3600) }.count == 10)
        #expect((19...20).contains(afterIdle.count))
    }

    @Test func theSlowestRateSpacesRequestsAndARateTooSlowForTheClockWaitsADay() {
        var slowest = RequestRate(perSecond: 0.001)
        slowest.take(now: .zero)
        #expect(slowest.nextRequest(now: .zero) == .seconds(1000))
        // Below what the configuration takes: 1e10 s a request would not fit
        // the nanoseconds a Duration is made of here; it waits a day at most.
        var tooSlow = RequestRate(perSecond: 1e-10)
        tooSlow.take(now: .zero)
        #expect(tooSlow.nextRequest(now: .zero) == .seconds(86_400))
    }
}
