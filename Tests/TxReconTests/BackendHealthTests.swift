// The backend's health as a value: when an outage begins and ends, the
// failure streak's start, which failed requests met the outage, and when
// the probes of a failing backend go out.
import Testing
@testable import TxRecon

@Suite struct BackendHealthTests {
    @Test func threeConsecutiveFailuresBeginAnOutageDatedFromTheFirst() {
        var health = BackendHealth()
        #expect(health.condition == .unknown)
        #expect(health.failed(.k(0), "HTTP 503", at: 1_000) == .none)
        #expect(health.failed(.k(1), "HTTP 503", at: 2_000) == .none)
        #expect(!health.isFailing)
        #expect(health.failed(.k(2), "timeout", at: 3_000) == .outageBegan)
        #expect(health.condition == .failing(since: 1_000, lastError: "timeout"))
        #expect(health.failed(.k(3), "HTTP 502", at: 4_000) == .none, "an outage begins once")
        #expect(health.condition == .failing(since: 1_000, lastError: "HTTP 502"))
        #expect(health.consecutiveFailures == 4)
    }

    @Test func anAnswerBetweenFailuresStartsTheStreakAgain() {
        var health = BackendHealth()
        _ = health.failed(.k(0), "HTTP 503", at: 1_000)
        _ = health.failed(.k(1), "HTTP 503", at: 2_000)
        #expect(health.answered(requestSent: .seconds(3)) == .none, "not failing yet: no outage ends")
        #expect(health.condition == .ok && health.consecutiveFailures == 0)
        _ = health.failed(.k(2), "HTTP 503", at: 5_000)
        _ = health.failed(.k(3), "HTTP 503", at: 6_000)
        #expect(!health.isFailing)
        #expect(health.failed(.k(4), "HTTP 503", at: 7_000) == .outageBegan)
        #expect(health.condition == .failing(since: 5_000, lastError: "HTTP 503"))
    }

    @Test func oneKeyFailingAgainAndAgainIsNeverAnOutage() {
        var health = BackendHealth()
        for wall in stride(from: Int64(1_000), through: 10_000, by: 1_000) {
            #expect(health.failed(.k(0), "HTTP 503", at: wall) == .none)
        }
        #expect(!health.isFailing && health.consecutiveFailures == 10)
        #expect(health.failed(.k(1), "HTTP 503", at: 11_000) == .none, "two keys are not three")
        #expect(health.failed(.k(2), "HTTP 503", at: 12_000) == .outageBegan)
        #expect(health.condition == .failing(since: 1_000, lastError: "HTTP 503"), "dated from the streak's first failure")
    }

    @Test func theAnswerThatEndsAnOutageSaysSinceWhenAndWhichFailuresMetIt() {
        var health = BackendHealth()
        for (n, wall) in ([1_000, 2_000, 3_000] as [Int64]).enumerated() { _ = health.failed(.k(n), "refused", at: wall) }
        #expect(!health.metOutage(sentAt: .seconds(1)), "no outage has ended yet")
        #expect(health.answered(requestSent: .seconds(10)) == .outageEnded(since: 1_000))
        #expect(health.condition == .ok)
        #expect(health.metOutage(sentAt: .seconds(9)), "sent before the answer that ended it")
        #expect(!health.metOutage(sentAt: .seconds(10)))
        #expect(!health.metOutage(sentAt: .seconds(11)))
        #expect(health.answered(requestSent: .seconds(12)) == .none)
    }

    @Test func theProbesOfAnOutageFollowTheirOwnScheduleAndRepeatItsLastStep() {
        var health = BackendHealth()
        let probes = RetrySchedule.probing
        _ = health.failed(.k(0), "HTTP 503", at: 0, now: .seconds(0), probes: probes)
        _ = health.failed(.k(1), "HTTP 503", at: 0, now: .seconds(1), probes: probes)
        #expect(health.nextProbeAt == nil, "no probing before the outage")
        #expect(health.failed(.k(2), "HTTP 503", at: 0, now: .seconds(2), probes: probes) == .outageBegan)
        #expect(health.nextProbeAt == .seconds(3), "the first probe one step (1 s) after the outage began")
        var now = Duration.seconds(3)
        for step in [2, 5, 10, 10, 10] {
            _ = health.failed(.k(3), "HTTP 503", at: 0, now: now, wasProbe: true, probes: probes)
            #expect(health.nextProbeAt == now + .seconds(step))
            now += .seconds(step)
        }
        #expect(health.failedProbes == 5)
        _ = health.answered(requestSent: now)
        #expect(health.nextProbeAt == nil && health.failedProbes == 0, "recovered: nothing to probe")
    }

    @Test func aFailureThatWasNotTheProbeLeavesTheProbeScheduleAloneUnlessItAsksForMoreTime() {
        var health = BackendHealth()
        for second in 0..<3 { _ = health.failed(.k(second), "refused", at: 0, now: .seconds(second), probes: .probing) }
        #expect(health.nextProbeAt == .seconds(3))
        // Attempts sent before the outage began fail after it: no probe.
        _ = health.failed(.k(0), "refused", at: 0, now: .seconds(2), probes: .probing)
        #expect(health.nextProbeAt == .seconds(3) && health.failedProbes == 0)
        _ = health.failed(.k(1), "HTTP 503", at: 0, now: .seconds(2), retryAfter: .seconds(30), probes: .probing)
        #expect(health.nextProbeAt == .seconds(32), "its Retry-After is honoured")
        _ = health.failed(.k(2), "HTTP 503", at: 0, now: .seconds(2), retryAfter: .seconds(5), probes: .probing)
        #expect(health.nextProbeAt == .seconds(32), "never brought forward by a shorter one")
    }

    @Test func aProbesRetryAfterPutsTheNextProbeOffButNeverBringsItForward() {
        var health = BackendHealth()
        for second in 0..<3 { _ = health.failed(.k(second), "HTTP 429", at: 0, now: .seconds(second), probes: .probing) }
        _ = health.failed(.k(0), "HTTP 429", at: 0, now: .seconds(3), retryAfter: .seconds(60), wasProbe: true,
                          probes: .probing)
        #expect(health.nextProbeAt == .seconds(63))
        _ = health.failed(.k(1), "HTTP 429", at: 0, now: .seconds(63), retryAfter: .zero, wasProbe: true, probes: .probing)
        #expect(health.nextProbeAt == .seconds(68), "the schedule's step (5 s) when Retry-After asks for less")
        _ = health.failed(.k(2), "HTTP 429", at: 0, now: .seconds(68), retryAfter: .seconds(86_400), wasProbe: true,
                          probes: .probing)
        #expect(health.nextProbeAt == .seconds(68) + Outcome.retryAfterCap, "capped as an item's is")
    }

    @Test func anOperatorsRetryProbesAtOnceOnlyDuringAnOutage() {
        var health = BackendHealth()
        health.probeNow(.seconds(5))
        #expect(health.nextProbeAt == nil)
        for second in 0..<3 { _ = health.failed(.k(second), "refused", at: 0, now: .seconds(second), probes: .probing) }
        health.probeNow(.seconds(2))
        #expect(health.nextProbeAt == .seconds(2))
    }
}

extension BackendHealth {
    /// A failure that is not a probe, at the same engine time as wall time.
    mutating func failed(_ key: ItemKey, _ reason: String, at wall: Int64) -> Change {
        failed(key, reason, at: wall, now: .milliseconds(wall), probes: .probing)
    }
}

extension ItemKey {
    /// Key number `n` of a test.
    static func k(_ n: Int) -> ItemKey { ItemKey("k\(n)")! }
}
