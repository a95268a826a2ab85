// The sweep against the mock App Store Server API on 127.0.0.1, on a manual
// clock: pages, faults, the checkpoint, a kill between a page and its
// checkpoint. No test sleeps: every wait goes through the clock.
import Synchronization
import Testing
import TxReconTestSupport
@testable import TxRecon

private let hour: Int64 = 3_600_000
private let day: Int64 = 86_400_000

/// `count` notifications spread over the last `days` days before `SweepHarness.start`;
/// every third one failed.
private func history(_ count: Int, overDays days: Int64 = 3) -> [MockAppStoreServerAPI.Entry] {
    (0..<count).map { number in
        let date = SweepHarness.start - days * day + Int64(number) * (days * day / Int64(count)) + 1_000
        return MockAppStoreServerAPI.Entry(date: date, signedPayload: SweepHarness.notification(number, signedDate: date),
                                           failed: number % 3 == 0)
    }
}

@Suite struct SweeperTests {
    @Test func everyNotificationLandsInTheSpoolOnce() async throws {
        let entries = history(10)
        let harness = try SweepHarness(entries: entries)
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(try harness.spooledPayloads().sorted() == entries.map(\.signedPayload).sorted())
        #expect(report.spooled == 10)
        #expect(report.found == 10 + entries.filter(\.failed).count)
        #expect(harness.api.problems == [])
    }

    @Test func severalPagesOfAWindowAreFollowedByTheirTokens() async throws {
        let entries = history(8, overDays: 1)
        let harness = try SweepHarness(entries: entries, pageSize: 3) { $0.window = .seconds(8 * 86_400) }
        let report = try await harness.run()
        let full = harness.api.served.filter { !$0.onlyFailures }
        #expect(full.count == 3 && full.first?.paginationToken == nil && full.dropFirst().allSatisfy { $0.paginationToken != nil })
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(try harness.spooledPayloads().count == 8)
    }

    @Test func theCheckpointMovesToTheEndOfTheLastWindowAndRemembersOnlyTheFailuresPassesDrops() async throws {
        let entries = history(4)
        let harness = try SweepHarness(entries: entries)
        let report = try await harness.run()
        let checkpoint = try harness.savedCheckpoint()
        #expect(checkpoint.completedThrough == SweepHarness.start - 2 * 60_000)
        let completedThrough = try #require(checkpoint.completedThrough)
        #expect(report.checkpoint == completedThrough)
        #expect(report.checkpointLagSeconds == (report.finishedAt - completedThrough) / 1000)
        #expect(checkpoint.pending == nil)
        let failed = entries.filter(\.failed).count
        #expect(failed > 0 && failed < entries.count)
        #expect(checkpoint.spooled.count == failed, "the full pass reads each window once and remembers none of its own")
    }

    @Test func aCheckpointAClockAheadLeftDoesNotHideWhatCameSince() async throws {
        // The last run's clock was 6 h fast; Apple answered 200 at T - 30 min
        // but the body never reached the spool.
        let date = SweepHarness.start - hour / 2
        let entry = MockAppStoreServerAPI.Entry(date: date, signedPayload: SweepHarness.notification(1, signedDate: date))
        let harness = try SweepHarness(entries: [entry])
        try harness.saveCheckpoint(SweepCheckpoint(completedThrough: SweepHarness.start + 6 * hour))
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(try harness.spooledPayloads() == [entry.signedPayload])
        #expect(try harness.savedCheckpoint().completedThrough == SweepHarness.start - 2 * 60_000)
    }

    @Test func aCheckpointOfTheSandboxIsNotTakenForProduction() async throws {
        // Environment= was Sandbox until now; Production's first run looks
        // 8 days back, not an hour.
        let date = SweepHarness.start - 3 * day
        let entry = MockAppStoreServerAPI.Entry(date: date, signedPayload: SweepHarness.notification(1, signedDate: date))
        let harness = try SweepHarness(entries: [entry])
        let bundleID = try #require(harness.settings.bundleID)
        harness.directory.makeDirectory("spool/sweep", mode: 0o750)
        harness.directory.write(#"{"format":1,"environment":"Sandbox","bundleId":"\#(bundleID)","#
            + #""completedThrough":\#(SweepHarness.start - 10 * 60_000),"pending":null,"spooled":{}}"#,
            to: "spool/sweep/checkpoint", mode: 0o640)
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(try harness.spooledPayloads() == [entry.signedPayload])
    }

    @Test func aCheckpointFromBeforeItNamedItsAppIsTakenAndMarked() async throws {
        let harness = try SweepHarness(entries: history(4))
        harness.directory.makeDirectory("spool/sweep", mode: 0o750)
        harness.directory.write(#"{"format":1,"completedThrough":\#(SweepHarness.start - 10 * 60_000),"#
            + #""pending":null,"spooled":{}}"#, to: "spool/sweep/checkpoint", mode: 0o640)
        let report = try await harness.run()
        #expect(report.checkpointMatch == .unmarked)
        let full = harness.api.served.filter { !$0.onlyFailures }
        #expect(full.map(\.startDate) == [SweepHarness.start - 10 * 60_000 - hour])
        let saved = try harness.savedCheckpoint()
        #expect(saved.environment == "Production" && saved.bundleID == harness.settings.bundleID)
        #expect(saved.match(harness.settings) == .same)
    }

    @Test func aSecondRunDropsNothingAlreadyDropped() async throws {
        let harness = try SweepHarness(entries: history(10))
        _ = try await harness.run()
        harness.clock.advance(by: .seconds(3600))
        let second = try await harness.run()
        #expect(second.stop == nil && second.spooled == 0 && second.found > 0)
        #expect(try harness.spooledPayloads().count == 10)
        let full = harness.api.served.filter { !$0.onlyFailures }
        #expect(full.last?.startDate == SweepHarness.start - 2 * 60_000 - hour)
    }

    @Test func aRateLimitedPageIsAskedForAgainAtTheRetryAfterTime() async throws {
        let harness = try SweepHarness(entries: history(6))
        harness.api.inject(.rateLimited(retryAfter: String(SweepHarness.start + 7_000)))
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(try harness.spooledPayloads().count == 6)
        #expect(harness.clock.sleeps.contains(.milliseconds(7_000)))
        let served = harness.api.served
        #expect(served[0].status == 429 && served[1].status == 200)
        #expect(served[0].startDate == served[1].startDate && served[0].paginationToken == served[1].paginationToken)
    }

    @Test func anExpiredPaginationTokenStartsTheWindowOverAndLosesNothing() async throws {
        let entries = history(8, overDays: 1)
        let harness = try SweepHarness(entries: entries, pageSize: 3) { $0.window = .seconds(8 * 86_400) }
        harness.api.inject(.expiredToken)
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        // Nothing lost; the window's pages before the refusal are dropped
        // again, which the daemon's supersede rule absorbs.
        #expect(Set(try harness.spooledPayloads()) == Set(entries.map(\.signedPayload)))
        let served = harness.api.served
        let expired = try #require(served.firstIndex { $0.status == 400 })
        #expect(served[expired].paginationToken != nil && served[expired + 1].paginationToken == nil)
        #expect(served[expired + 1].startDate == served[expired].startDate)
    }

    @Test func serverErrorsAreRetriedAfterABackoff() async throws {
        let harness = try SweepHarness(entries: history(6))
        harness.api.inject(.serverError(503), .retryableError)
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(try harness.spooledPayloads().count == 6)
        #expect(harness.clock.sleeps.prefix(2) == [.seconds(1), .seconds(2)])
        #expect(harness.api.served.prefix(3).map(\.status) == [503, 500, 200])
    }

    @Test func serverErrorsThatKeepComingEndTheRunAsTemporary() async throws {
        let harness = try SweepHarness(entries: history(6))
        for _ in 0...RateLimiter.maximumBackoffs { harness.api.inject(.serverError(503)) }
        let report = try await harness.run()
        #expect(report.stop?.kind == .temporary && report.exitStatus == 75)
        #expect(try harness.spooledPayloads().isEmpty)
    }

    @Test(arguments: [#"{"error":"nope"}"#, #"{"hasMore":false}"#, #"{"notificationHistory":[]}"#, "{}",
                      #"{"notificationHistory":null,"hasMore":false}"#, #"{"notificationHistory":[],"hasMore":null}"#])
    func aSuccessThatIsNotAHistoryPageEndsTheRunAsTemporaryAndKeepsTheCheckpoint(body: String) async throws {
        let harness = try SweepHarness(entries: history(6))
        let before = SweepCheckpoint(completedThrough: SweepHarness.start - hour)
        try harness.saveCheckpoint(before)
        for _ in 0...RateLimiter.maximumBackoffs { harness.api.inject(.success(body: body)) }
        let report = try await harness.run()
        #expect(report.stop?.kind == .temporary && report.exitStatus == 75, "\(body)")
        #expect(report.stop?.reason.contains("not a notification history page") == true, "\(String(describing: report.stop))")
        #expect(try harness.savedCheckpoint() == before, "nothing was read, so nothing is marked as swept")
        #expect(try harness.spooledPayloads().isEmpty)
    }

    @Test func theFailuresPassRecoversWhatApplesRetriesGaveUpOn() async throws {
        let entries = history(9, overDays: 6)
        let harness = try SweepHarness(entries: entries)
        try harness.saveCheckpoint(SweepCheckpoint(completedThrough: SweepHarness.start - hour))
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(try harness.spooledPayloads().sorted() == entries.filter(\.failed).map(\.signedPayload).sorted())
        let failed = entries.filter(\.failed).map(\.date)
        let gaps = ReconcileGaps.read(layout: harness.layout)
        #expect(!gaps.isEmpty && gaps.allSatisfy { $0.source == "sweep" })
        #expect(gaps.map(\.from).min() == failed.min() && gaps.map(\.to).max() == failed.max()! + 60_000,
                "the reconcile hears when notifications went undelivered (a gap per page)")
    }

    @Test func aRunThatFoundNothingUndeliveredReportsNoGap() async throws {
        let entries = history(9, overDays: 6).map { MockAppStoreServerAPI.Entry(date: $0.date, signedPayload: $0.signedPayload) }
        let harness = try SweepHarness(entries: entries)
        try harness.saveCheckpoint(SweepCheckpoint(completedThrough: SweepHarness.start - 7 * day))
        let report = try await harness.run()
        #expect(report.stop == nil && report.spooled == 9, "\(String(describing: report.stop))")
        #expect(ReconcileGaps.read(layout: harness.layout) == [],
                "what the full pass spools reached the receiver once already")
    }

    @Test func aKillBetweenAPageAndItsCheckpointLosesNothingAndOnlyRepeatsThatPage() async throws {
        let entries = history(8, overDays: 1)
        let harness = try SweepHarness(entries: entries, pageSize: 3) { $0.window = .seconds(8 * 86_400) }
        // Saves: the failures page (entries 0, 3, 6), then full pages 1 (0-2),
        // 2 (3-5) and 3 (6, 7). The kill comes after full page 2's new
        // notifications (4, 5) are in new/ but before its checkpoint.
        let killed = try await harness.run(interruptAtSave: 3)
        #expect(killed.stop?.kind == .failed)
        let afterKill = try harness.spooledPayloads()
        let resumed = try await harness.run()
        #expect(resumed.stop == nil, "\(String(describing: resumed.stop))")
        let all = try harness.spooledPayloads()
        #expect(Set(all) == Set(entries.map(\.signedPayload)))
        // Each repeated drop is a byte-identical copy of one already there:
        // same key, same version, which the daemon supersedes undelivered.
        var copies = all
        for payload in Set(all) { copies.remove(at: copies.firstIndex(of: payload)!) }
        #expect(copies.allSatisfy { afterKill.contains($0) })
        #expect(copies.sorted() == [entries[4], entries[5]].map(\.signedPayload).sorted())
        let decoder = InputDecoder()
        for copy in copies {
            guard case .item(let item) = try decoder.decode(Array(#"{"signedPayload":"\#(copy)"}"#.utf8)) else {
                Issue.record("not an item")
                continue
            }
            #expect(item.key.rawValue.hasPrefix("00000000-0000-4000-8000-"))
        }
    }

    @Test func unauthorizedStopsTheRunWithExitStatus78() async throws {
        let harness = try SweepHarness(entries: history(3))
        harness.api.refuseCredentials()
        let report = try await harness.run()
        #expect(report.exitStatus == 78 && report.stop?.kind == .configuration)
        #expect(report.stop?.reason.contains("HTTP 401") == true)
        #expect(try harness.spooledPayloads().isEmpty)
        #expect(try harness.savedCheckpoint() == SweepCheckpoint())
    }

    @Test func aCheckpointBeyondTheHistoryLimitIsClampedAndSaidSo() async throws {
        let harness = try SweepHarness(entries: history(3)) { $0.environment = .sandbox; $0.window = .seconds(30 * 86_400) }
        try harness.saveCheckpoint(SweepCheckpoint(completedThrough: SweepHarness.start - 40 * day))
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        let earliest = SweepHarness.start - 30 * day + hour
        #expect(report.clamped == (SweepHarness.start - 40 * day - hour)..<earliest)
        #expect(ReconcileGaps.read(layout: harness.layout).contains(
            ReconcileGap(source: "sweep", from: SweepHarness.start - 40 * day - hour, to: earliest)))
        #expect(harness.api.served.allSatisfy { $0.startDate >= earliest && $0.status == 200 })
        #expect(report.logEntry.priority == .warning)
        #expect(report.logEntry.message.contains("beyond Apple's 30-day limit"))
    }

    @Test func aDryRunListsWhatItWouldSpoolAndWritesNothing() async throws {
        let entries = history(5)
        let harness = try SweepHarness(entries: entries)
        let listed = Mutex<[String]>([])
        let report = try await harness.run(listing: { notification in
            listed.withLock { $0.append(notification.signedPayload) }
        })
        #expect(report.dryRun && report.spooled == 5)
        #expect(listed.withLock { $0 }.sorted() == entries.map(\.signedPayload).sorted())
        #expect(try harness.spooledPayloads().isEmpty)
        #expect(try SystemCall.linkStatus(harness.layout.root + "/sweep/checkpoint") == nil)
    }

    /// Apple answers 429 with a Retry-After near the longest the sweep
    /// waits before every page; each page starts the budgets afresh, so
    /// only the app's turn bounds the run. It stops as temporary within the
    /// turn, at the last page saved, and the next run goes on from there.
    @Test func rateLimitsBetweenPagesEndTheRunWithinItsTurnAtTheLastPageSaved() async throws {
        let entries = history(30, overDays: 1)
        let harness = try SweepHarness(entries: entries, pageSize: 3) { $0.window = .seconds(8 * 86_400) }
        for _ in 0..<30 { harness.api.inject(.rateLimited(retryAfter: "590"), .usualAnswer) }
        let deadline = harness.clock.now + .seconds(3600)
        let report = try await harness.run(deadline: deadline)
        #expect(report.stop?.kind == .temporary && report.exitStatus == 75, "\(String(describing: report.stop))")
        #expect(report.stop?.reason.contains("the next run resumes at the full") == true,
                "\(String(describing: report.stop))")
        #expect(harness.clock.now <= deadline, "no wait outlasts the turn")
        let first = harness.api.served
        let fullPages = first.filter { !$0.onlyFailures && $0.status == 200 }.count
        #expect(fullPages > 0 && fullPages < 10)
        let pending = try #require(try harness.savedCheckpoint().pending)

        let next = try await harness.run()
        #expect(next.stop == nil, "\(String(describing: next.stop))")
        let resumed = harness.api.served.dropFirst(first.count).filter { !$0.onlyFailures && $0.status == 200 }
        #expect(resumed.first?.paginationToken == pending.paginationToken)
        #expect(resumed.filter { $0.startDate == pending.start }.count == 10 - fullPages,
                "the page after the last one saved, none again")
        #expect(Set(try harness.spooledPayloads()) == Set(entries.map(\.signedPayload)))
    }

    /// A backlog longer than the app's turn (here a minute's worth of
    /// requests at one a second, the turn 8 s) is paged no further than
    /// the turn: no 429, no wait refused, only the turn's end.
    @Test func aBacklogLongerThanTheTurnStopsAtItsEndAndTheNextRunGoesOn() async throws {
        let entries = history(30, overDays: 1)
        let harness = try SweepHarness(entries: entries, pageSize: 3) {
            $0.window = .seconds(8 * 86_400)
            $0.maxRequestsPerSecond = 1
        }
        let deadline = harness.clock.now + .seconds(8)
        let report = try await harness.run(deadline: deadline)
        #expect(report.stop?.kind == .temporary && report.exitStatus == 75, "\(String(describing: report.stop))")
        #expect(report.stop?.reason.contains("turn of the run is spent") == true
                && report.stop?.reason.contains("the next run resumes at the full") == true,
                "\(String(describing: report.stop))")
        #expect(harness.api.served.count == 8, "one request a second, none at the turn's end")
        #expect(try harness.savedCheckpoint().pending != nil)
        let next = try await harness.run()
        #expect(next.stop == nil, "\(String(describing: next.stop))")
        #expect(Set(try harness.spooledPayloads()) == Set(entries.map(\.signedPayload)))
    }

    /// Apple (or a proxy) answers a pagination token with more to come and
    /// the same token: asked again, it would answer the same for ever.
    @Test func aPageThatGivesBackTheTokenItWasAskedWithStopsTheRun() async throws {
        let harness = try SweepHarness(entries: history(6))
        let looping = #"{"notificationHistory":[],"hasMore":true,"paginationToken":"again"}"#
        for _ in 0..<20 { harness.api.inject(.success(body: looping)) }
        let report = try await harness.run()
        #expect(report.stop?.kind == .failed && report.exitStatus == 1, "\(String(describing: report.stop))")
        #expect(report.stop?.reason.contains("same token") == true, "\(String(describing: report.stop))")
        let restarts = Sweeper.maximumWindowRestarts
        #expect(harness.api.served.map(\.paginationToken)
                == Array(repeating: [nil, "again"], count: restarts + 1).flatMap { $0 },
                "the window started over \(restarts) times, then nothing asked")
    }

    /// A stale token saved by the run before may be what loops: the
    /// window is started over from its first page, and the run goes on.
    @Test func aLoopingTokenStartsTheWindowOverAndTheRunGoesOn() async throws {
        let harness = try SweepHarness(entries: history(6))
        let looping = #"{"notificationHistory":[],"hasMore":true,"paginationToken":"again"}"#
        harness.api.inject(.success(body: looping), .success(body: looping))
        let report = try await harness.run()
        #expect(report.stop == nil, "\(String(describing: report.stop))")
        #expect(harness.api.served.map(\.paginationToken).prefix(3) == [nil, "again", nil])
        #expect(report.spooled == 6)
    }

    @Test func requestsArePacedAtMaxRequestsPerSecond() async throws {
        let harness = try SweepHarness(entries: history(3)) { $0.maxRequestsPerSecond = 2 }
        _ = try await harness.run()
        #expect(!harness.clock.sleeps.isEmpty && harness.clock.sleeps.allSatisfy { $0 == .milliseconds(500) })
    }
}

@Suite struct SweepReportTests {
    private func report() -> SweepReport {
        var report = SweepReport(environment: .production, dryRun: false, startedAt: 1_767_225_600_000)
        report.finishedAt = 1_767_225_660_000
        report.pages = 4
        report.found = 50
        report.spooled = 2
        report.checkpoint = 1_767_225_480_000
        return report
    }

    @Test func theLogEntryCarriesTheCountsAndTheCheckpointLag() {
        let entry = report().logEntry
        #expect(entry.messageID == MessageID.sweepFinished && entry.priority == .notice)
        #expect(entry.message == "sweep (Production) completed: 4 pages, 50 notifications found, 2 newly spooled; "
            + "checkpoint 2025-12-31T23:58:00.000Z (3min behind)")
        #expect(entry.field("TXRECON_SWEEP_RESULT") == "completed" && entry.field("TXRECON_SWEEP_PAGES") == "4")
        #expect(entry.field("TXRECON_SWEEP_FOUND") == "50" && entry.field("TXRECON_SWEEP_SPOOLED") == "2")
        #expect(entry.field("TXRECON_SWEEP_CHECKPOINT_LAG_SEC") == "180")
    }

    @Test func aStoppedRunIsLoggedWithItsReasonAtItsPriority() {
        var stopped = report()
        stopped.stop = SweepStop(kind: .temporary, reason: "Apple keeps failing")
        #expect(stopped.logEntry.priority == .warning && stopped.exitStatus == 75)
        #expect(stopped.logEntry.message.hasPrefix("sweep (Production) stopped: Apple keeps failing; 4 pages"))
        #expect(stopped.logEntry.field("TXRECON_REASON") == "Apple keeps failing")
    }

    @Test func theLastRunFileReadsBackForStatus() throws {
        let directory = TemporaryDirectory()
        let layout = SpoolLayout(root: directory.path)
        try SweepStateDirectory(layout: layout).saveLastRun(report())
        let last = try #require(LastSweep.read(layout))
        #expect(last.result == "completed" && last.pages == 4 && last.spooled == 2)
        #expect(last.finishedAt == 1_767_225_660_000 && last.checkpoint == 1_767_225_480_000)
    }
}
