// The owned values the delivery engine keeps its state in, each decided
// without the engine: whether and when the next attempt may start
// (StartPacing), when a changed status is handed on (StatusPublication),
// what it knows of done/ (DoneUpkeep), and what it writes down about an
// item (DeliveryReports).
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct StartPacingTests {
    static let keys = ["a", "b", "c"].map { ItemKey($0)! }

    /// Three different keys failing in a row: the backend counts as failing.
    static func failing(_ pacing: inout StartPacing, at now: Duration) {
        for key in keys {
            _ = pacing.health.failed(key, "503", at: 1_000, now: now, probes: .probing)
        }
        #expect(pacing.health.isFailing)
    }

    @Test func aHealthyBackendWithoutARateStartsEachKeyWhenItIsDue() {
        var pacing = StartPacing(maxRate: nil)
        var start = pacing.start(due: .seconds(5), now: .seconds(1))
        #expect(start == .seconds(5))
        pacing.started(Self.keys[0], now: .seconds(5))
        #expect(pacing.active == 1)
        start = pacing.start(due: .seconds(5), now: .seconds(5))
        #expect(start == .seconds(5))
    }

    @Test func aFailingBackendGetsOneProbeAtATimeAtTheProbeSchedulesTime() {
        var pacing = StartPacing(maxRate: nil)
        Self.failing(&pacing, at: .seconds(10))
        // The first probe one probe step (1 s) after the outage began, not
        // before the key's own next attempt.
        var start = pacing.start(due: .seconds(10), now: .seconds(10))
        #expect(start == .seconds(11))
        start = pacing.start(due: .seconds(30), now: .seconds(10))
        #expect(start == .seconds(30))
        pacing.started(Self.keys[0], now: .seconds(11))
        #expect(pacing.health.probe == Self.keys[0])
        start = pacing.start(due: .seconds(11), now: .seconds(11))
        #expect(start == nil, "no second probe while one is out")
    }

    @Test func maxRatePutsTheNextStartOffAndOnlyAChangedRateRefillsTheBucket() {
        var pacing = StartPacing(maxRate: 1)
        var start = pacing.start(due: .zero, now: .zero)
        #expect(start == .zero)
        pacing.started(Self.keys[0], now: .zero)
        start = pacing.start(due: .zero, now: .zero)
        #expect(start == .seconds(1))
        pacing.setMaxRate(1, was: 1)
        start = pacing.start(due: .zero, now: .zero)
        #expect(start == .seconds(1), "an unchanged rate keeps its bucket")
        pacing.setMaxRate(2, was: 1)
        start = pacing.start(due: .zero, now: .zero)
        #expect(start == .zero)
        pacing.setMaxRate(nil, was: 2)
        pacing.started(Self.keys[1], now: .zero)
        start = pacing.start(due: .zero, now: .zero)
        #expect(start == .zero)
    }
}

@Suite struct StatusPublicationTests {
    @Test func anAttemptsChangeIsHandedOnAtOnceAfterAQuietSpellAndThenOncePerInterval() {
        let handed = Mutex<[EngineStatus]>([])
        var publication = StatusPublication(interval: .milliseconds(100)) { status in
            handed.withLock { $0.append(status) }
        }
        var wait = publication.changedByAttempt(at: .seconds(1))
        #expect(wait == .zero)
        publication.status.delivered = 1
        publication.publish(at: .seconds(1))
        var delivered = handed.withLock { $0.map(\.delivered) }
        #expect(delivered == [1])
        // 10 ms later: the rest of the interval.
        wait = publication.changedByAttempt(at: .seconds(1) + .milliseconds(10))
        #expect(wait == .milliseconds(90))
        publication.armed(EngineTimer {})
        wait = publication.changedByAttempt(at: .seconds(1) + .milliseconds(20))
        #expect(wait == nil, "the armed flush takes it")
        publication.endFlush()
        publication.status.delivered = 2
        publication.publish(at: .seconds(1) + .milliseconds(100))
        delivered = handed.withLock { $0.map(\.delivered) }
        #expect(delivered == [1, 2])
    }

    @Test func endingTheFlushCancelsItsTimer() {
        let cancelled = Mutex(0)
        var publication = StatusPublication(interval: .milliseconds(100)) { _ in }
        publication.publish(at: .zero)
        _ = publication.changedByAttempt(at: .milliseconds(1))
        publication.armed(EngineTimer { cancelled.withLock { $0 += 1 } })
        publication.endFlush()
        publication.endFlush()
        let cancellations = cancelled.withLock { $0 }
        #expect(cancellations == 1)
    }

    @Test func aReloadedIntervalAppliesToTheNextChange() {
        var publication = StatusPublication(interval: .milliseconds(100)) { _ in }
        publication.publish(at: .zero)
        publication.setInterval(.milliseconds(500))
        var wait = publication.changedByAttempt(at: .milliseconds(100))
        #expect(wait == .zero, "a new coalescer knows no last write")
        publication.publish(at: .milliseconds(100))
        wait = publication.changedByAttempt(at: .milliseconds(200))
        #expect(wait == .milliseconds(400))
    }
}

@Suite struct DoneUpkeepTests {
    let a = ItemKey("a")!, b = ItemKey("b")!

    @Test func aBuiltIndexRulesOutKeysAndLearnsTheDeliveredOnes() {
        var upkeep = DoneUpkeep { _ in .success(DoneIndex()) }
        #expect(upkeep.mayHold(a), "without an index every key may be in done/")
        let index = DoneIndex()
        index.add(a)
        let warning = upkeep.built(.success(index))
        #expect(warning == nil)
        #expect(upkeep.mayHold(a) && !upkeep.mayHold(b))
        let rebuilds = upkeep.delivered(b)
        #expect(rebuilds == false)
        #expect(upkeep.mayHold(b))
    }

    @Test func aFailedBuildIsAWarningThatSaysWhatIsReadInstead() {
        var upkeep = DoneUpkeep { _ in .success(DoneIndex()) }
        let first = upkeep.built(.failure(SpoolError("opendir", "done", EACCES)))
        #expect(first?.priority == .warning)
        #expect(first?.message.contains("cannot list done/") == true)
        #expect(first?.message.contains("every new snapshot is checked against done/") == true)
        #expect(upkeep.built(.success(DoneIndex())) == nil)
        let later = upkeep.built(.failure(SpoolError("opendir", "done", EIO)))
        #expect(later?.message.contains("not in the older index is checked") == true)
        #expect(upkeep.keys.index != nil, "the older index stays")
    }
}

@Suite struct DeliveryReportsTests {
    final class Recorder: ConfirmationRecorder {
        let recorded = Mutex<[(String, ItemKey, Int)]>([])
        func record(destination: String, item: Item, attempt: Int, confirmation: TxRecon.Confirmation, at: Int64) {
            recorded.withLock { $0.append((destination, item.key, attempt)) }
        }
    }

    /// The CONSUMPTION_REQUEST ConsumptionDeadlinesTests warns about, signed then.
    static let signed = ConsumptionDeadlinesTests.signed
    let request = ConsumptionDeadlinesTests().request

    @Test func aDeliveryIsLoggedAndRecordedInTheLedgerOnlyWhenItsItemWasRead() {
        let log = RecordingLogSink(), ledger = Recorder()
        var reports = DeliveryReports(log: log, ledger: ledger)
        reports.delivered(request.key, item: nil, attempt: 1, confirmation: .http(status: 200), destination: "main",
                          at: Self.signed, inbox: nil, app: nil)
        var recorded = ledger.recorded.withLock { $0.map { "\($0.0) \($0.1) \($0.2)" } }
        #expect(log.entries.isEmpty && recorded.isEmpty)
        reports.delivered(request.key, item: request, attempt: 2, confirmation: .http(status: 200),
                          destination: "main", at: Self.signed, inbox: nil, app: nil)
        #expect(log.entries(withMessageID: MessageID.delivered).count == 1)
        recorded = ledger.recorded.withLock { $0.map { "\($0.0) \($0.1) \($0.2)" } }
        #expect(recorded == ["main n-1 2"])
    }

    @Test func aDeadlineIsWarnedAboutOncePerRequestUntilItIsDelivered() {
        let log = RecordingLogSink()
        var reports = DeliveryReports(log: log, ledger: nil)
        let late = Self.signed + 3 * 3_600_000
        var warned = reports.watchDeadline(request, held: false, after: nil, destination: "main", now: late)
        #expect(!warned,
                "a destination that answers for nothing warns of nothing")
        warned = reports.watchDeadline(request, held: false, after: .seconds(7200), destination: "main", now: late)
        #expect(warned)
        warned = reports.watchDeadline(request, held: true, after: .seconds(7200), destination: "main", now: late)
        #expect(!warned)
        reports.delivered(request.key, item: request, attempt: 3, confirmation: .http(status: 200),
                          destination: "main", at: late, inbox: nil, app: nil)
        warned = reports.watchDeadline(request, held: true, after: .seconds(7200), destination: "main", now: late)
        #expect(warned)
        #expect(log.entries(withMessageID: MessageID.consumptionDeadline).count == 2)
    }
}
