import Testing
@testable import TxRecon

/// 2026-01-01T00:00:00Z
private let now: Int64 = 1_767_225_600_000
private let minute: Int64 = 60_000
private let hour: Int64 = 3_600_000
private let day: Int64 = 86_400_000

private func settings(_ environment: AppStoreEnvironment = .production, window: Duration = .seconds(86_400),
                      overlap: Duration = .seconds(3600)) -> SweepSettings {
    var settings = SweepSettings()
    settings.environment = environment
    settings.window = window
    settings.overlap = overlap
    return settings
}

@Suite struct SweepPlanTests {
    @Test func theFirstRunSweepsFailuresThenEverythingOfTheLastEightDays() {
        let plan = SweepPlan(now: now, settings: settings(), checkpoint: SweepCheckpoint())
        let failures = plan.windows.filter { $0.pass == .failures }
        let full = plan.windows.filter { $0.pass == .full }
        #expect(plan.windows.first?.pass == .failures && plan.windows.last?.pass == .full)
        #expect(failures.first?.start == now - 8 * day && failures.last?.end == now - 2 * minute)
        #expect(full.first?.start == now - 8 * day && full.last?.end == now - 2 * minute)
        #expect(failures.allSatisfy { $0.request.onlyFailures } && full.allSatisfy { !$0.request.onlyFailures })
        #expect(plan.clamped == nil)
    }

    @Test func theFullPassStartsAtTheCheckpointLessTheOverlap() {
        let checkpoint = SweepCheckpoint(completedThrough: now - 3 * hour)
        let plan = SweepPlan(now: now, settings: settings(), checkpoint: checkpoint)
        let full = plan.windows.filter { $0.pass == .full }
        #expect(full.map(\.start) == [now - 4 * hour])
        #expect(full.map(\.end) == [now - 2 * minute])
    }

    @Test func windowsAreContiguousAndAtMostWindowLong() {
        let plan = SweepPlan(now: now, settings: settings(window: .seconds(36 * 3600)),
                             checkpoint: SweepCheckpoint(completedThrough: now - 5 * day))
        for pass in [SweepWindow.Pass.failures, .full] {
            let windows = plan.windows.filter { $0.pass == pass }
            #expect(windows.allSatisfy { $0.end - $0.start <= 36 * hour && $0.start < $0.end })
            #expect(zip(windows, windows.dropFirst()).allSatisfy { $0.end == $1.start })
        }
    }

    @Test func aCheckpointOlderThanAppleKeepsIsClampedTo180DaysInProduction() {
        let checkpoint = SweepCheckpoint(completedThrough: now - 200 * day)
        let plan = SweepPlan(now: now, settings: settings(.production), checkpoint: checkpoint)
        let earliest = now - 180 * day + hour
        #expect(plan.clamped == (now - 200 * day - hour)..<earliest)
        #expect(plan.windows.filter { $0.pass == .full }.first?.start == earliest)
        #expect(plan.windows.allSatisfy { $0.start >= earliest })
    }

    @Test func aCheckpointOlderThanTheSandboxKeepsIsClampedTo30Days() {
        let checkpoint = SweepCheckpoint(completedThrough: now - 45 * day)
        let plan = SweepPlan(now: now, settings: settings(.sandbox), checkpoint: checkpoint)
        let earliest = now - 30 * day + hour
        #expect(plan.clamped == (now - 45 * day - hour)..<earliest)
        #expect(plan.windows.filter { $0.pass == .full }.first?.start == earliest)
    }

    @Test func aCheckpointWithinTheLimitIsNotClamped() {
        let checkpoint = SweepCheckpoint(completedThrough: now - 29 * day)
        #expect(SweepPlan(now: now, settings: settings(.sandbox), checkpoint: checkpoint).clamped == nil)
    }

    @Test func anInterruptedWindowComesFirstUnchangedSoItsTokenStillFits() {
        let pending = SweepCheckpoint.PendingWindow(start: now - 30 * hour, end: now - 6 * hour, paginationToken: "t")
        let checkpoint = SweepCheckpoint(completedThrough: now - 29 * hour, pending: pending)
        let full = SweepPlan(now: now, settings: settings(), checkpoint: checkpoint).windows.filter { $0.pass == .full }
        #expect(full.first == SweepWindow(pass: .full, start: now - 30 * hour, end: now - 6 * hour))
    }

    @Test func theWindowsAfterAnInterruptedOneStartOverlapBeforeItsEnd() {
        let pending = SweepCheckpoint.PendingWindow(start: now - 30 * hour, end: now - 6 * hour, paginationToken: "t")
        let checkpoint = SweepCheckpoint(completedThrough: now - 29 * hour, pending: pending)
        let full = SweepPlan(now: now, settings: settings(), checkpoint: checkpoint).windows.filter { $0.pass == .full }
        #expect(full.dropFirst().first?.start == now - 7 * hour)
        #expect(full.last?.end == now - 2 * minute)
    }

    @Test func aCheckpointLaterThanNowCountsAsNone() {
        let checkpoint = SweepCheckpoint(completedThrough: now + 6 * hour)
        let full = SweepPlan(now: now, settings: settings(), checkpoint: checkpoint).windows.filter { $0.pass == .full }
        #expect(full.first?.start == now - 8 * day && full.last?.end == now - 2 * minute)
    }

    @Test func aPendingWindowLaterThanNowCountsAsNone() {
        let pending = SweepCheckpoint.PendingWindow(start: now + 5 * hour, end: now + 6 * hour, paginationToken: "t")
        let checkpoint = SweepCheckpoint(completedThrough: now + 5 * hour, pending: pending)
        let full = SweepPlan(now: now, settings: settings(), checkpoint: checkpoint).windows.filter { $0.pass == .full }
        #expect(full.first?.start == now - 8 * day && full.last?.end == now - 2 * minute)
    }

    @Test func nothingIsPlannedForTheFullPassRightAfterARunWithoutOverlap() {
        let checkpoint = SweepCheckpoint(completedThrough: now - 2 * minute)
        let plan = SweepPlan(now: now, settings: settings(overlap: .zero), checkpoint: checkpoint)
        #expect(plan.windows.allSatisfy { $0.pass == .failures })
    }
}
