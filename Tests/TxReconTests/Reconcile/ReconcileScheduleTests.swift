// ReconcileScheduleTests: each row of the schedule's table, on fixed times.
import Testing
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
}
