// The backend's health as a value: when an outage begins and ends, the
// failure streak's start, and which failed requests met the outage.
import Testing
@testable import TxRecon

@Suite struct BackendHealthTests {
    @Test func threeConsecutiveFailuresBeginAnOutageDatedFromTheFirst() {
        var health = BackendHealth()
        #expect(health.condition == .unknown)
        #expect(health.failed("HTTP 503", at: 1_000) == .none)
        #expect(health.failed("HTTP 503", at: 2_000) == .none)
        #expect(!health.isFailing)
        #expect(health.failed("timeout", at: 3_000) == .outageBegan)
        #expect(health.condition == .failing(since: 1_000, lastError: "timeout"))
        #expect(health.failed("HTTP 502", at: 4_000) == .none, "an outage begins once")
        #expect(health.condition == .failing(since: 1_000, lastError: "HTTP 502"))
        #expect(health.consecutiveFailures == 4)
    }

    @Test func anAnswerBetweenFailuresStartsTheStreakAgain() {
        var health = BackendHealth()
        _ = health.failed("HTTP 503", at: 1_000)
        _ = health.failed("HTTP 503", at: 2_000)
        #expect(health.answered(requestSent: .seconds(3)) == .none, "not failing yet: no outage ends")
        #expect(health.condition == .ok && health.consecutiveFailures == 0)
        _ = health.failed("HTTP 503", at: 5_000)
        _ = health.failed("HTTP 503", at: 6_000)
        #expect(!health.isFailing)
        #expect(health.failed("HTTP 503", at: 7_000) == .outageBegan)
        #expect(health.condition == .failing(since: 5_000, lastError: "HTTP 503"))
    }

    @Test func theAnswerThatEndsAnOutageSaysSinceWhenAndWhichFailuresMetIt() {
        var health = BackendHealth()
        for wall in [1_000, 2_000, 3_000] as [Int64] { _ = health.failed("refused", at: wall) }
        #expect(!health.metOutage(sentAt: .seconds(1)), "no outage has ended yet")
        #expect(health.answered(requestSent: .seconds(10)) == .outageEnded(since: 1_000))
        #expect(health.condition == .ok)
        #expect(health.metOutage(sentAt: .seconds(9)), "sent before the answer that ended it")
        #expect(!health.metOutage(sentAt: .seconds(10)))
        #expect(!health.metOutage(sentAt: .seconds(11)))
        #expect(health.answered(requestSent: .seconds(12)) == .none)
    }
}
