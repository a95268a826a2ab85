// ReconcileScheduleTests: each row of the schedule's table, on fixed times.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct ReconcileScheduleTests {
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000
    let schedule = ReconcileSchedule(fullCycle: 7 * day, firstRun: 1_800_000_000_000)
    var now: Int64 { schedule.firstRun + 30 * Self.day }

    @Test func anExpiredSubscriptionIsCheckedAnHourAfterItsExpiryAndADayLater() {
        let expired = now - 2 * Self.hour
        #expect(schedule.reason(customer: "c", expiresDates: [expired], lastChecked: now - Self.day, now: now) == .expiry)
        #expect(schedule.reason(customer: "c", expiresDates: [expired], lastChecked: expired + Self.hour, now: now) == nil,
                "checked after the first check's time: not due before the second")
        let yesterday = now - 26 * Self.hour
        #expect(schedule.reason(customer: "c", expiresDates: [yesterday], lastChecked: yesterday + 2 * Self.hour,
                                now: now) == .expiry, "the second check, 25 h after")
        #expect(schedule.reason(customer: "c", expiresDates: [yesterday], lastChecked: yesterday + 25 * Self.hour,
                                now: now) == nil)
    }

    @Test func notYetAnHourAfterItsExpiryIsNotDue() {
        #expect(schedule.reason(customer: "c", expiresDates: [now - Self.hour / 2], lastChecked: now - Self.day,
                                now: now) == nil)
    }

    @Test func anyOfACustomersSubscriptionsMakesItDue() {
        #expect(schedule.reason(customer: "c", expiresDates: [now + 20 * Self.day, now - 2 * Self.hour],
                                lastChecked: now - Self.day, now: now) == .expiry)
    }

    @Test func aSubscriptionIsCheckedOncePerCycleWhileItLivesAndFor180DaysAfter() {
        let active = now + 10 * Self.day
        #expect(schedule.reason(customer: "c", expiresDates: [active], lastChecked: now - 7 * Self.day, now: now) == .cycle)
        #expect(schedule.reason(customer: "c", expiresDates: [active], lastChecked: now - 6 * Self.day, now: now) == nil)
        let expiredLongAgo = now - 100 * Self.day
        #expect(schedule.reason(customer: "c", expiresDates: [expiredLongAgo], lastChecked: now - 8 * Self.day,
                                now: now) == .cycle)
        let forgotten = now - 181 * Self.day
        #expect(schedule.reason(customer: "c", expiresDates: [forgotten], lastChecked: nil, now: now) == nil,
                "expired more than 180 days ago: no longer a candidate")
    }

    /// A wall clock once far ahead recorded a check a year from now: taken
    /// as it is, the customer would be out of every check for that year.
    @Test func aCheckRecordedLaterThanNowCountsAsNone() {
        let aYearAhead = now + 365 * Self.day
        #expect(schedule.reason(customer: "c", expiresDates: [now + 10 * Self.day], lastChecked: aYearAhead,
                                now: now) == .cycle)
        #expect(schedule.reason(customer: "c", expiresDates: [now - 2 * Self.hour], lastChecked: aYearAhead,
                                now: now) == .expiry)
        #expect(ReconcileSchedule.mark(now, asOf: now) == now && ReconcileSchedule.mark(now + 1, asOf: now) == nil)
    }

    @Test func theFirstChecksOfAnInstallationSpreadOverOneCycle() {
        let customers = (0..<1000).map { "app:\(7_000_000 + $0)" }
        let active = [schedule.firstRun + 60 * Self.day]
        let dueAfterOneDay = customers.filter {
            schedule.reason(customer: $0, expiresDates: active, lastChecked: nil, now: schedule.firstRun + Self.day) != nil
        }
        // About a seventh on the first day, everyone within the cycle.
        #expect((90...200).contains(dueAfterOneDay.count), "\(dueAfterOneDay.count)")
        #expect(customers.allSatisfy {
            schedule.reason(customer: $0, expiresDates: active, lastChecked: nil,
                            now: schedule.firstRun + 7 * Self.day) == .cycle
        })
        #expect(ReconcileSchedule.phase(of: "app:7000001", in: 7 * Self.day)
                == ReconcileSchedule.phase(of: "app:7000001", in: 7 * Self.day), "stable from run to run")
    }

    /// Never checked (a new installation, an upgrade, a deleted state
    /// file): a subscription that lapsed days before the first run is the
    /// installation's backlog, asked at the customer's place in the first
    /// cycle as a live one is, not all in the first hour.
    @Test func theFirstChecksOfSubscriptionsThatLapsedLongBeforeTheFirstRunSpreadOverOneCycle() {
        let customers = (0..<1000).map { (id: "app:\(7_000_000 + $0)",
                                          expired: [schedule.firstRun - Self.day - Int64($0) * 179 * Self.day / 1000]) }
        let dueAtTheFirstRun = customers.filter {
            schedule.reason(customer: $0.id, expiresDates: $0.expired, lastChecked: nil, now: schedule.firstRun) != nil
        }
        #expect(dueAtTheFirstRun.count < 5, "\(dueAtTheFirstRun.count)")
        let dueAfterOneDay = customers.filter {
            schedule.reason(customer: $0.id, expiresDates: $0.expired, lastChecked: nil,
                            now: schedule.firstRun + Self.day) != nil
        }
        // About a seventh on the first day.
        #expect((90...200).contains(dueAfterOneDay.count), "\(dueAfterOneDay.count)")
    }

    /// What lapsed in the day before the first run (or since) is asked on
    /// its expiry checks' times, checked or not: the schedule's promise for
    /// what has just lapsed holds from the first run.
    @Test func aCustomerNeverCheckedIsAskedOnTheExpiryChecksOfWhatLapsedInTheDayBeforeTheFirstRun() {
        let firstRun = schedule.firstRun
        #expect(schedule.reason(customer: "c", expiresDates: [firstRun - 2 * Self.hour], lastChecked: nil,
                                now: firstRun) == .expiry)
        #expect(schedule.reason(customer: "c", expiresDates: [firstRun - 20 * Self.hour], lastChecked: nil,
                                now: firstRun) == .expiry)
        #expect(schedule.reason(customer: "c", expiresDates: [firstRun + Self.day], lastChecked: nil,
                                now: firstRun + Self.day + 2 * Self.hour) == .expiry)
        #expect(schedule.reason(customer: "c", expiresDates: [firstRun - 3 * Self.day], lastChecked: nil,
                                now: firstRun + Self.hour) != .expiry, "lapsed days before: its place in the cycle")
    }
}

@Suite struct ReconcileGapTests {
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000

    @Test func aSubscriptionLiveInAGapIsDueUntilCheckedAfterTheGapEnded() {
        let firstRun: Int64 = 1_800_000_000_000
        let now = firstRun + 30 * Self.day
        let gap = ReconcileGap(source: "receive", from: now - 3 * Self.hour, to: now - 2 * Self.hour)
        let schedule = ReconcileSchedule(fullCycle: 7 * Self.day, firstRun: firstRun, gaps: [gap])
        let active = [now + 10 * Self.day]
        #expect(schedule.reason(customer: "c", expiresDates: active, lastChecked: now - Self.day, now: now) == .gap)
        #expect(schedule.reason(customer: "c", expiresDates: active, lastChecked: gap.to, now: now) == nil,
                "checked after the gap ended")
        #expect(schedule.reason(customer: "c", expiresDates: [gap.from - 3 * Self.day], lastChecked: now - Self.day,
                                now: now) == nil, "expired before the gap: nothing of it could be lost")
    }

    @Test func aGapFileNameReadsBackAndOnlyGapsThatEndedBeforeARunAreSettledByIt() {
        let gap = ReconcileGap(source: "sweep", from: 1_700_000_000_000, to: 1_700_000_060_000)
        #expect(ReconcileGap(fileName: gap.fileName) == gap)
        #expect(ReconcileGap(fileName: "sweep-2-1") == nil && ReconcileGap(fileName: "notes.txt") == nil)
        let later = ReconcileGap(source: "receive", from: 1_700_000_000_000, to: 1_700_003_600_000)
        #expect(ReconcileGaps.settled([gap, later], runStart: 1_700_000_100_000, leftDue: []) == [gap])
        // A customer the run left due (refused, failed) holds back the gap it was live in.
        #expect(ReconcileGaps.settled([gap], runStart: 1_700_000_100_000, leftDue: [[gap.from + 1]]) == [])
        #expect(ReconcileGaps.settled([gap], runStart: 1_700_000_100_000, leftDue: [[gap.from - 1]]) == [gap],
                "expired before the gap: not live in it")
        #expect(ReconcileGaps.receiverGap(at: 1_700_000_123_456)
                == ReconcileGap(source: "receive", from: 1_699_999_200_000, to: 1_700_002_800_000))
    }

    @Test func aGapReportedTwiceIsOneFile() throws {
        let directory = TemporaryDirectory("txrecon-gaps")
        let layout = SpoolLayout(root: directory.path)
        let gap = ReconcileGap(source: "receive", from: 1_700_000_000_000, to: 1_700_003_600_000)
        try ReconcileGaps.report(gap, layout: layout)
        try ReconcileGaps.report(gap, layout: layout)
        #expect(ReconcileGaps.read(layout: layout) == [gap])
        ReconcileGaps.remove([gap], layout: layout)
        #expect(ReconcileGaps.read(layout: layout) == [])
    }

    /// A sweep killed after the gap file's fsync but before its
    /// directory's leaves a file whose name a power cut can still lose:
    /// reporting it again syncs the directory before the checkpoint moves.
    @Test func aGapReportedAgainSyncsItsDirectoryAllTheSame() throws {
        let directory = TemporaryDirectory("txrecon-gaps")
        let layout = SpoolLayout(root: directory.path)
        let gap = ReconcileGap(source: "sweep", from: 1_700_000_000_000, to: 1_700_000_060_000)
        var synced: [String] = []
        for _ in 0..<2 {
            try ReconcileGaps.report(gap, layout: layout) { (path: String) throws(SpoolError) in synced.append(path) }
        }
        #expect(synced == Array(repeating: ReconcileGaps.directory(of: layout), count: 2))
    }
}
