// AppleAPISessionAskTests: how one request to Apple's API ends, with a
// manual clock: Apple's "not found, retry" answers about one customer fail
// that customer's request once the backoff budget is spent, when the caller
// says they concern it alone (reconcile), and the next customer starts with
// the whole budget; so do 5xx answers, but for several requests in a row;
// anything else spent ends the run as before.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct AppleAPISessionAskTests {
    private let start: Int64 = 1_767_225_600_000

    private static func refusal(_ status: Int, errorCode: Int64) -> APIAnswer<Int> {
        .refused(AppStoreAPIError(status: status, body: Array(#"{"errorCode":\#(errorCode),"errorMessage":"x"}"#.utf8),
                                  retryAfter: nil))
    }

    private func ask(_ answer: APIAnswer<Int>, limiter: RateLimiter, clock: ManualSweepClock,
                     retriesConcernThisOne: Bool,
                     serverFailuresConcernThisOne: Bool = false) throws(SweepStop) -> (Asked<Int>, requests: Int) {
        var requests = 0
        let asked = try AppleAPISession.ask({ requests += 1; return answer }, limiter: limiter, clock: clock,
                                            what: "a number", resume: "again", retriesConcernThisOne: retriesConcernThisOne,
                                            serverFailuresConcernThisOne: serverFailuresConcernThisOne)
        return (asked, requests)
    }

    /// Apple failing (5xx) past the backoffs fails the one request for a
    /// caller that says such failures may concern it (reconcile), the next
    /// with the whole budget; `maximumServerFailures` in a row, with no
    /// answer between, are Apple down and end the run.
    @Test func aServerFailureFailsOneRequestAndSeveralInARowEndTheRun() throws {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        let failing = APIAnswer<Int>.refused(AppStoreAPIError(status: 503, body: [], retryAfter: nil))
        for round in 0..<2 {
            for _ in 1..<RateLimiter.maximumServerFailures {
                let (asked, requests) = try ask(failing, limiter: limiter, clock: clock, retriesConcernThisOne: true,
                                                serverFailuresConcernThisOne: true)
                guard case .failed(let why) = asked else {
                    Issue.record("not failed: \(asked)")
                    return
                }
                #expect(why.contains("503") && requests == RateLimiter.maximumBackoffs + 1, "\(why)")
            }
            if round == 0 {
                // An answer between: Apple is up, the count starts afresh.
                _ = try ask(.answered(1), limiter: limiter, clock: clock, retriesConcernThisOne: true)
            }
        }
        let stopped = #expect(throws: SweepStop.self) {
            try ask(failing, limiter: limiter, clock: clock, retriesConcernThisOne: true,
                    serverFailuresConcernThisOne: true)
        }
        #expect(stopped?.kind == .temporary && stopped?.reason.contains("in a row") == true,
                "\(String(describing: stopped))")
    }

    @Test func aRetryAnswerAboutOneCustomerFailsItsRequestAndTheNextHasTheWholeBudget() throws {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        for _ in 0..<2 {
            let (asked, requests) = try ask(Self.refusal(404, errorCode: 4_040_006), limiter: limiter, clock: clock,
                                            retriesConcernThisOne: true)
            guard case .failed(let why) = asked else {
                Issue.record("not failed: \(asked)")
                return
            }
            #expect(why.contains("4040006"))
            #expect(requests == RateLimiter.maximumBackoffs + 1)
        }
    }

    @Test func aRetryAnswerEndsTheRunForACallerThatDoesNotSayItConcernsOneAndAnOutageAlways() {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let limiter = RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 })
        let stopped = #expect(throws: SweepStop.self) {
            try ask(Self.refusal(404, errorCode: 4_040_006), limiter: limiter, clock: clock, retriesConcernThisOne: false)
        }
        #expect(stopped?.kind == .temporary)
        let outage = #expect(throws: SweepStop.self) {
            try ask(Self.refusal(500, errorCode: 5_000_001), limiter: RateLimiter(maxRequestsPerSecond: 5, clock: clock,
                                                                                jitter: { 1 }),
                    clock: clock, retriesConcernThisOne: true)
        }
        #expect(outage?.kind == .temporary, "Apple failing is not about one customer")
    }

    /// A refusal about the app (a wrong bundle id, a wrong BaseURL=) would
    /// come for every customer: it ends the run as a configuration problem
    /// (exit 78) at the first answer, not one failed customer at a time.
    @Test func aRefusalAboutTheAppEndsTheRunAsAConfigurationProblem() {
        let clock = ManualSweepClock(wallMilliseconds: start)
        let answers: [APIAnswer<Int>] = [
            Self.refusal(400, errorCode: 4_000_002), Self.refusal(404, errorCode: 4_040_003),
            .refused(AppStoreAPIError(status: 404, body: Array("<html>Not Found</html>".utf8), retryAfter: nil)),
        ]
        for answer in answers {
            let stopped = #expect(throws: SweepStop.self) {
                try ask(answer, limiter: RateLimiter(maxRequestsPerSecond: 5, clock: clock, jitter: { 1 }), clock: clock,
                        retriesConcernThisOne: true)
            }
            #expect(stopped?.kind == .configuration, "\(answer)")
        }
        let other = try? ask(Self.refusal(400, errorCode: 4_000_001), limiter: RateLimiter(
            maxRequestsPerSecond: 5, clock: clock, jitter: { 1 }), clock: clock, retriesConcernThisOne: true)
        guard case .failed? = other?.0 else {
            Issue.record("another 4xx fails that one request: \(String(describing: other))")
            return
        }
    }
}
