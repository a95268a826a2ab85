// RateLimiter: how fast the sweep asks Apple, and how long it waits after
// Apple says no.
//
// - Pace: requests start at least 1/MaxRequestsPerSecond apart (monotonic
//   clock), retries included.
// - 429: wait for `Retry-After`, which Apple sends as a UNIX time in
//   milliseconds; a value up to 10^12 is read as seconds to wait (RFC 9110's
//   form). At least 1 s, doubling with each 429 in a row up to 60 s: that
//   time is on Apple's clock, and with this host's clock ahead it reads as
//   past. At most `longestRetryAfter`, at most `maximumRateLimitWaits` in a
//   row; beyond that the run gives up and the next one resumes.
// - 5xx, Apple's retryable errors and network failures: exponential backoff
//   from 1 s doubling to 60 s, each wait drawn between half and all of it
//   (jitter, so that many hosts do not retry in step), at most
//   `maximumBackoffs` in a row.
// - A deadline, when given (`txrecon answer`'s run, an app's turn of a
//   `txrecon sweep` or `txrecon reconcile` run): no wait that would end
//   past it; the run gives up as when a budget is spent. The budgets start
//   afresh after each answer, so without one, 429s between pages have no
//   bound.
//
// Every wait goes through the injected `SweepClock`. Not Sendable: one per
// run, used by the sweep's thread. Reports nothing; the sweeper words the
// reason when a budget is spent.

package final class RateLimiter {
    /// Waits in a row after transient failures before the run gives up: 6
    /// (about a minute in all).
    static let maximumBackoffs = 6
    static let firstBackoff: Duration = .seconds(1)
    static let longestBackoff: Duration = .seconds(60)
    /// The longest `Retry-After` the sweep waits for: 10 minutes.
    static let longestRetryAfter: Duration = .seconds(600)
    /// 429 answers in a row the sweep waits out before it gives up: 10.
    static let maximumRateLimitWaits = 10
    /// Requests in a row given up after Apple's 5xx answers spent the
    /// backoffs, for a caller that holds such a failure to be about the one
    /// account asked for (reconcile), before the run stops: 3 (a few
    /// minutes of backoff). One may be Apple failing on that account's
    /// data; three in a row, with no answer between, are Apple down.
    static let maximumServerFailures = 3
    /// `Retry-After` values above this are UNIX times in milliseconds.
    static let epochMillisecondsThreshold: Int64 = 1_000_000_000_000

    /// The least time between the starts of two requests.
    let interval: Duration
    private let clock: any SweepClock
    /// A factor in 0.5...1 applied to each backoff.
    private let jitter: () -> Double
    /// No wait ends after this (the clock's monotonic time); nil: none.
    private let deadline: Duration?
    private var lastRequest: Duration?
    private var backoffsInARow = 0
    private var rateLimitWaitsInARow = 0
    /// The last wait refused was refused for the deadline, not a budget.
    private var refusedForTheDeadline = false
    private var serverFailuresInARow = 0

    /// - Parameters:
    ///   - maxRequestsPerSecond: `MaxRequestsPerSecond=`, at least 1.
    ///   - jitter: default a uniform draw from 0.5...1; tests pass a constant.
    ///   - deadline: on `clock.now`'s scale, when waiting must be over;
    ///     default none.
    package init(maxRequestsPerSecond: Int, clock: any SweepClock, jitter: @escaping () -> Double = { Double.random(in: 0.5...1) },
                 deadline: Duration? = nil) {
        precondition(maxRequestsPerSecond >= 1, "RateLimiter: \(maxRequestsPerSecond) requests per second")
        interval = .seconds(1) / maxRequestsPerSecond
        self.clock = clock
        self.jitter = jitter
        self.deadline = deadline
    }

    /// Waits as `disposition` says before the same request is asked again:
    /// true after a `waitAndRetry` or `backOffAndRetry` it could wait out,
    /// false for any other disposition (the caller's to carry out). Throws,
    /// as temporary, once Apple's waits or the backoffs in a row are spent;
    /// `resume` says what the next run does.
    func wait(after disposition: AnswerDisposition, resume: String) throws(SweepStop) -> Bool {
        switch disposition {
        case .waitAndRetry(let delay):
            guard waitOutRateLimit(delay) else {
                throw refusal("Apple keeps rate-limiting the requests (Retry-After \(TimeSpan.format(delay)))",
                              resume: resume)
            }
            return true
        case .backOffAndRetry(let why):
            guard backOff() else {
                throw refusal(refusedForTheDeadline ? why : "\(why), \(Self.maximumBackoffs + 1) times in a row",
                              resume: resume)
            }
            return true
        case .restartWindow, .stop:
            return false
        }
    }

    /// The stop after a wait refused: `why` it was asked for, and that its
    /// budget or the run's time is spent.
    private func refusal(_ why: String, resume: String) -> SweepStop {
        SweepStop(kind: .temporary, reason: why + (refusedForTheDeadline ? "; waiting again would outlast this "
            + "run's time" : "") + "; " + resume)
    }

    /// Whether a wait of `duration` from now ends by the deadline; notes
    /// the refusal when not.
    private func endsByTheDeadline(_ duration: Duration) -> Bool {
        refusedForTheDeadline = deadline.map { clock.now + duration > $0 } ?? false
        return !refusedForTheDeadline
    }

    /// Blocks until the next request may start, then counts it as started.
    func awaitTurn() {
        if let lastRequest {
            clock.sleep(for: lastRequest + interval - clock.now)
        }
        lastRequest = clock.now
    }

    /// An answer came that is not a failure: the budgets start afresh.
    func succeeded() {
        backoffsInARow = 0
        rateLimitWaitsInARow = 0
        serverFailuresInARow = 0
    }

    /// A request is given up after Apple's 5xx answers spent the backoffs:
    /// true, with the next request's budgets afresh, while fewer than
    /// `maximumServerFailures` were given up so in a row; false once that
    /// many were (the run's to stop).
    func gaveUpAfterServerFailures() -> Bool {
        serverFailuresInARow += 1
        guard serverFailuresInARow < Self.maximumServerFailures else { return false }
        backoffsInARow = 0
        rateLimitWaitsInARow = 0
        return true
    }

    /// Waits out a transient failure; false, without waiting, when
    /// `maximumBackoffs` waits in a row have not helped or the wait would
    /// end past the deadline.
    func backOff() -> Bool {
        refusedForTheDeadline = false
        guard backoffsInARow < Self.maximumBackoffs else { return false }
        let full = min(Self.firstBackoff * (1 << backoffsInARow), Self.longestBackoff)
        let wait = full * min(1, max(0.5, jitter()))
        guard endsByTheDeadline(wait) else { return false }
        backoffsInARow += 1
        clock.sleep(for: wait)
        return true
    }

    /// Waits `delay` as a 429's `Retry-After` asks; false, without waiting,
    /// when it is longer than `longestRetryAfter`, the answers keep coming,
    /// or it would end past the deadline.
    func waitOutRateLimit(_ delay: Duration) -> Bool {
        refusedForTheDeadline = false
        guard delay <= Self.longestRetryAfter, rateLimitWaitsInARow < Self.maximumRateLimitWaits else { return false }
        let least = min(Self.firstBackoff * (1 << rateLimitWaitsInARow), Self.longestBackoff)
        guard endsByTheDeadline(max(delay, least)) else { return false }
        rateLimitWaitsInARow += 1
        clock.sleep(for: max(delay, least))
        return true
    }

    /// The wait a `Retry-After` value asks for at `nowMilliseconds` (wall
    /// clock): until that UNIX time in milliseconds when above 10^12, else
    /// that many seconds; zero for a time already past; nil when the header
    /// is absent or not a whole number.
    static func retryAfterDelay(_ header: String?, nowMilliseconds: Int64) -> Duration? {
        guard let text = header?.trimmingASCIISpaces(), !text.isEmpty,
              text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        // Too many digits for Int64 is a time far away: longer than any wait.
        let value = Int64(text) ?? Int64.max
        if value > epochMillisecondsThreshold {
            return .milliseconds(max(0, value - nowMilliseconds))
        }
        return .seconds(value)
    }
}
