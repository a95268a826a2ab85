import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct RateLimiterTests {
    private let start: Int64 = 1_767_225_600_000

    @Test func requestsStartNoCloserThanTheRequestRateAllows() {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        for _ in 0..<3 { limiter.awaitTurn() }
        #expect(clock.sleeps == [.milliseconds(200), .milliseconds(200)])
    }

    @Test func timeSpentSinceTheLastRequestCountsTowardsThePace() {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        limiter.awaitTurn()
        clock.advance(by: .milliseconds(150))
        limiter.awaitTurn()
        #expect(clock.sleeps == [.milliseconds(50)])
    }

    @Test func aRetryAfterAboveTenToTheTwelveIsAUnixTimeInMilliseconds() {
        #expect(RateLimiter.retryAfterDelay(String(start + 7_500), nowMilliseconds: start) == .milliseconds(7_500))
    }

    @Test func aSmallRetryAfterIsSeconds() {
        #expect(RateLimiter.retryAfterDelay("30", nowMilliseconds: start) == .seconds(30))
    }

    @Test func aRetryAfterAlreadyPastWaitsNothing() {
        #expect(RateLimiter.retryAfterDelay(String(start - 1_000), nowMilliseconds: start) == .zero)
    }

    @Test func aRetryAfterThatIsNoNumberIsIgnored() {
        #expect(RateLimiter.retryAfterDelay("Wed, 21 Oct 2015 07:28:00 GMT", nowMilliseconds: start) == nil)
        #expect(RateLimiter.retryAfterDelay(nil, nowMilliseconds: start) == nil)
    }

    @Test func backoffDoublesFromOneSecondWithJitterThenGivesUp() {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 0.5 })
        let attempts = (0..<(RateLimiter.maximumBackoffs + 1)).map { _ in limiter.backOff() }
        #expect(attempts == Array(repeating: true, count: RateLimiter.maximumBackoffs) + [false])
        #expect(clock.sleeps == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16)])
    }

    @Test func aSuccessStartsTheBackoffAfresh() {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        _ = limiter.backOff()
        _ = limiter.backOff()
        limiter.succeeded()
        _ = limiter.backOff()
        #expect(clock.sleeps == [.seconds(1), .seconds(2), .seconds(1)])
    }

    @Test func aRetryAfterAlreadyPastIsWaitedAtLeastASecondDoublingInARow() {
        // Apple's Retry-After is a time on Apple's clock: with this host's
        // clock ahead, it reads as past. Without a floor ten 429s in a row
        // would be spent in an instant, with Apple still limiting.
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        for _ in 0..<8 { #expect(limiter.waitOutRateLimit(.zero)) }
        #expect(limiter.waitOutRateLimit(.seconds(90)))
        #expect(clock.sleeps == [1, 2, 4, 8, 16, 32, 60, 60, 90].map { Duration.seconds($0) })
        limiter.succeeded()
        #expect(limiter.waitOutRateLimit(.zero))
        #expect(clock.sleeps.last == .seconds(1), "a success starts the floor afresh")
    }

    @Test func aRetryAfterLongerThanTenMinutesIsNotWaitedFor() {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        #expect(!limiter.waitOutRateLimit(.seconds(601)))
        #expect(limiter.waitOutRateLimit(.seconds(600)))
        #expect(clock.sleeps == [.seconds(600)])
    }
}

@Suite struct AnswerDispositionTests {
    private let now: Int64 = 1_767_225_600_000

    private func refused(_ status: Int, _ body: String = "", retryAfter: String? = nil) -> HistoryAnswer {
        .refused(AppStoreAPIError(status: status, body: Array(body.utf8), retryAfter: retryAfter))
    }

    @Test func rateLimitedWaitsForTheRetryAfterTime() {
        let answer = refused(429, #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#,
                             retryAfter: String(now + 3_000))
        #expect(AnswerDisposition.after(answer, nowMilliseconds: now) == .waitAndRetry(.seconds(3)))
    }

    @Test func rateLimitedWithoutRetryAfterBacksOff() {
        guard case .backOffAndRetry = AnswerDisposition.after(refused(429), nowMilliseconds: now) else {
            Issue.record("not a backoff")
            return
        }
    }

    @Test func aServerErrorBacksOff() {
        guard case .backOffAndRetry(let why) = AnswerDisposition.after(refused(503), nowMilliseconds: now) else {
            Issue.record("not a backoff")
            return
        }
        #expect(why.contains("HTTP 503"))
    }

    @Test func generalInternalRetryableBacksOff() {
        let answer = refused(500, #"{"errorCode":5000001,"errorMessage":"An unknown error occurred. Please try again."}"#)
        guard case .backOffAndRetry = AnswerDisposition.after(answer, nowMilliseconds: now) else {
            Issue.record("not a backoff")
            return
        }
    }

    @Test func anUnreachableServerBacksOff() {
        guard case .backOffAndRetry = AnswerDisposition.after(.unreachable("timeout"), nowMilliseconds: now) else {
            Issue.record("not a backoff")
            return
        }
    }

    @Test func aPageThatIsNotAPageBacksOff() {
        guard case .backOffAndRetry = AnswerDisposition.after(.malformed("no JSON"), nowMilliseconds: now) else {
            Issue.record("not a backoff")
            return
        }
    }

    @Test func anInvalidPaginationTokenRestartsTheWindow() {
        let answer = refused(400, #"{"errorCode":4000014,"errorMessage":"Invalid pagination token."}"#)
        #expect(AnswerDisposition.after(answer, nowMilliseconds: now) == .restartWindow)
    }

    @Test func anExpiredPaginationTokenRestartsTheWindow() {
        let answer = refused(400, #"{"errorCode":4000017,"errorMessage":"Pagination token is expired."}"#)
        #expect(AnswerDisposition.after(answer, nowMilliseconds: now) == .restartWindow)
    }

    @Test func unauthorizedStopsAsAConfigurationProblem() {
        guard case .stop(let stop) = AnswerDisposition.after(refused(401), nowMilliseconds: now) else {
            Issue.record("not a stop")
            return
        }
        #expect(stop.kind == .configuration && stop.exitStatus == 78)
    }

    @Test func aStartDateTooFarInThePastStopsAndPointsAtTheClock() {
        let answer = refused(400, #"{"errorCode":4000012,"errorMessage":"Invalid request. The start date is earlier than the allowed start date."}"#)
        guard case .stop(let stop) = AnswerDisposition.after(answer, nowMilliseconds: now) else {
            Issue.record("not a stop")
            return
        }
        #expect(stop.kind == .failed && stop.reason.contains("clock") && stop.reason.contains("4000012"))
    }

    @Test func anyOtherRefusalStopsWithApplesCode() {
        let answer = refused(400, #"{"errorCode":4000006,"errorMessage":"Invalid request."}"#)
        guard case .stop(let stop) = AnswerDisposition.after(answer, nowMilliseconds: now) else {
            Issue.record("not a stop")
            return
        }
        #expect(stop.kind == .failed && stop.exitStatus == 1 && stop.reason.contains("errorCode 4000006"))
    }
}
