// The response table, one row per case, and Retry-After parsing.
import Testing
@testable import TxRecon

@Suite struct OutcomeTests {
    static let now = 1_800_000_000.0

    func outcome(_ status: Int, retryAfter: String? = nil, body: String = "") -> Outcome {
        Outcome(.response(status: status, retryAfter: retryAfter, bodyPrefix: Array(body.utf8)), now: Self.now,
                redactor: SecretRedactor())
    }

    @Test(arguments: [200, 201, 204, 226, 299])
    func successOtherThan202IsDelivered(status: Int) {
        #expect(outcome(status) == .delivered(.http(status: status)))
    }

    @Test(arguments: [202, 401, 403, 407, 408, 421, 425, 429, 500, 502, 503, 504, 599, 301, 302, 304, 100])
    func theseAnswersAreRetried(status: Int) {
        guard case .retryLater(_, let code, _) = outcome(status) else {
            Issue.record("\(status) not retried")
            return
        }
        #expect(code == status)
    }

    @Test(arguments: [400, 404, 405, 409, 410, 413, 415, 422, 451, 499])
    func otherClientErrorsAreHeldWithStatusAndBody(status: Int) {
        #expect(outcome(status, body: "why") == .hold(reason: "HTTP \(status): why", status: status))
    }

    @Test func aHoldReasonKeepsAtMost512BytesOfTheBody() {
        guard case let .hold(reason, _) = outcome(422, body: String(repeating: "x", count: 2000)) else {
            Issue.record("not held")
            return
        }
        #expect(reason == "HTTP 422: " + String(repeating: "x", count: 512))
    }

    @Test(arguments: TransportFailure.Kind.allCases)
    func transportFailuresAreRetried(kind: TransportFailure.Kind) {
        let result = Outcome(.failure(TransportFailure(kind, "detail")), now: Self.now, redactor: SecretRedactor())
        #expect(result == .retryLater(reason: "\(kind.rawValue): detail", status: nil, retryAfter: nil))
    }

    @Test func retryAfterInSecondsIsTakenAndCappedAtAnHour() {
        #expect(outcome(503, retryAfter: "120") == .retryLater(reason: "HTTP 503", status: 503, retryAfter: .seconds(120)))
        #expect(outcome(429, retryAfter: "999999") == .retryLater(reason: "HTTP 429", status: 429, retryAfter: .seconds(3600)))
        #expect(outcome(503, retryAfter: "soon") == .retryLater(reason: "HTTP 503", status: 503, retryAfter: nil))
    }

    @Test func retryAfterAsAnHTTPDateIsCountedFromNow() {
        // 1_800_000_000 is 2027-01-15T08:00:00Z.
        #expect(HTTPDate.parse("Fri, 15 Jan 2027 08:00:00 GMT") == Self.now)
        #expect(RetryAfter.delay(from: "Fri, 15 Jan 2027 08:01:30 GMT", now: Self.now) == .seconds(90))
        #expect(RetryAfter.delay(from: "Fri, 15 Jan 2027 07:00:00 GMT", now: Self.now) == .zero)
        #expect(HTTPDate.parse("Friday, 15-Jan-27 08:00:00 GMT") == nil)
    }

    @Test func theScheduleRepeatsItsLastStepAndRetryAfterOnlyRaisesIt() {
        let schedule = RetrySchedule.standard
        let delays = (1...8).map { schedule.delay(afterFailedAttempts: $0) }
        #expect(delays == [2, 5, 15, 30, 60, 300, 300, 300].map { Duration.seconds($0) })
        #expect(schedule.delay(afterFailedAttempts: 1, retryAfter: .seconds(1)) == .seconds(2))
        #expect(schedule.delay(afterFailedAttempts: 1, retryAfter: .seconds(40)) == .seconds(40))
        #expect(RetrySchedule(delays: []) == nil)
        #expect(RetrySchedule(delays: [.zero]) == nil)
    }
}
