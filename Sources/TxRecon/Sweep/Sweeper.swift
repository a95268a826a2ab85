// Sweeper: one run of `txrecon sweep`: page every window of the plan and
// drop each notification not dropped before into the spool.
//
// For each window: ask for a page (paced by the `RateLimiter`), drop every
// new notification as `{"signedPayload": …}` through `Submission` (tmp/,
// fsync, rename into new/, fsync new/), then save the checkpoint, and only
// then ask for the next page. The checkpoint's `completedThrough` moves to
// the end of a full-pass window after its last page is spooled, so a kill at
// any instant leaves the window to be fetched again: nothing is lost, and
// what is dropped twice has the same key and version, which the daemon's
// supersede rule absorbs. Answers that are not pages go through
// `AnswerDisposition`: wait and ask again, start the window over, or stop.
// No page is asked for once this app's turn of the run is spent (AppTurns):
// the run stops as temporary, and the checkpoint saved after the last page
// lets the next run go on from there.
// What `txrecon reconcile` should check again is reported as a gap
// (ReconcileGaps), durably and before the checkpoint passes it: the span of
// the notifications Apple could not deliver, and history Apple no longer
// keeps.
//
// The sweep only produces: the daemon verifies, keys, supersedes and
// delivers what it drops. In a dry run nothing is dropped or saved; each
// notification that would be dropped goes to `listing` instead. Touches
// tmp/ and new/ (through `Submission`) and the state store; reports through
// the returned `SweepReport`, never by logging itself. Blocks (HTTP, fsync,
// sleeps): run it on a dedicated thread.

/// One run. Not Sendable: made, run and dropped on the sweep's thread.
package final class Sweeper {
    /// How often one window may be started over after Apple refused its
    /// pagination token, before the run gives up: 3.
    static let maximumWindowRestarts = 3
    /// How far before the earliest window a spooled notification is still
    /// remembered: 1 day, for history dates and `signedDate` that differ.
    static let rememberMargin: Duration = .seconds(86_400)

    private let settings: SweepSettings
    private let client: AppStoreAPIClient
    private let limiter: RateLimiter
    private let clock: any SweepClock
    private let submission: Submission
    private let store: any SweepStateStore
    private let listing: ((HistoryNotification) -> Void)?
    /// On `clock.now`'s scale, when this app's turn of the run ends
    /// (AppTurns); nil: none.
    private let deadline: Duration?

    /// - Parameter listing: nil for a real run; for a dry run, what to do
    ///   with each notification that would be spooled.
    /// - Parameter deadline: when this app's turn ends: no page is asked for
    ///   at or past it. Give `limiter` the same, so that no wait outlasts it.
    package init(settings: SweepSettings, client: AppStoreAPIClient, limiter: RateLimiter, clock: any SweepClock,
         submission: Submission, store: any SweepStateStore, listing: ((HistoryNotification) -> Void)? = nil,
         deadline: Duration? = nil) {
        self.deadline = deadline
        self.settings = settings
        self.client = client
        self.limiter = limiter
        self.clock = clock
        self.submission = submission
        self.store = store
        self.listing = listing
    }

    private var dryRun: Bool { listing != nil }

    /// Sweeps every window of this run's plan; blocks until done or stopped.
    package func run() -> SweepReport {
        var report = SweepReport(environment: settings.environment, dryRun: dryRun, startedAt: clock.wallMilliseconds)
        var checkpoint = SweepCheckpoint()
        do throws(SweepStop) {
            let saved = try store.loadCheckpoint()
            report.checkpointMatch = saved.match(settings)
            if case .other = report.checkpointMatch {
                // Another environment's or bundle's history: a first run.
            } else {
                checkpoint = saved
            }
            checkpoint.environment = settings.environment.rawValue
            checkpoint.bundleID = settings.bundleID
            let plan = SweepPlan(now: report.startedAt, settings: settings, checkpoint: checkpoint)
            report.clamped = plan.clamped
            report.checkpointAhead = plan.checkpointAhead
            if plan.checkpointAhead != nil {
                // Saved as it is, a page of the failures pass would write
                // the future date back.
                checkpoint.completedThrough = nil
                checkpoint.pending = nil
            }
            if let clamped = plan.clamped {
                checkpoint.pending = nil
                if !dryRun {
                    try store.reportGap(ReconcileGap(source: "sweep", from: clamped.lowerBound, to: clamped.upperBound))
                }
            }
            let earliest = plan.windows.map(\.start).min() ?? report.startedAt
            checkpoint.forgetSpooled(before: earliest - Self.rememberMargin.milliseconds)
            for window in plan.windows {
                try sweep(window, checkpoint: &checkpoint, report: &report)
            }
        } catch {
            report.stop = error
        }
        report.checkpoint = checkpoint.completedThrough
        report.finishedAt = clock.wallMilliseconds
        return report
    }

    /// Pages one window to its end.
    private func sweep(_ window: SweepWindow, checkpoint: inout SweepCheckpoint,
                       report: inout SweepReport) throws(SweepStop) {
        var token: String?
        if window.pass == .full, let pending = checkpoint.pending, pending.start == window.start,
           pending.end == window.end {
            token = pending.paginationToken
        }
        var restarts = 0
        while true {
            limiter.awaitTurn()
            if let deadline, clock.now >= deadline {
                // The checkpoint saved after the last page holds this
                // window's token (or its start): nothing is skipped.
                throw SweepStop(kind: .temporary, reason: "this app's turn of the run is spent (a run shares its "
                    + "time, within txrecon-sweep.service's TimeoutStartSec=, among the apps); the next run "
                    + "resumes at the \(window) window")
            }
            let answer = client.notificationHistory(window.request, paginationToken: token)
            guard case .page(let page) = answer else {
                let disposition = AnswerDisposition.after(answer, nowMilliseconds: clock.wallMilliseconds)
                if try limiter.wait(after: disposition, resume: "the next run resumes at the \(window) window") {
                    continue
                }
                switch disposition {
                case .waitAndRetry, .backOffAndRetry:
                    break  // waited out above
                case .restartWindow:
                    guard token != nil, restarts < Self.maximumWindowRestarts else {
                        throw SweepStop(kind: .failed, reason: "Apple keeps refusing the pagination tokens of the "
                            + "\(window) window")
                    }
                    restarts += 1
                    token = nil
                    checkpoint.pending = nil
                case .stop(let stop):
                    throw stop
                }
                continue
            }
            if page.hasMore, let asked = token, page.paginationToken == asked {
                // A loop that never ends if followed. Started over from the
                // window's first page, as after a refused token (a stale
                // token saved by the run before may be the cause); still
                // looping then, the run fails, not temporary: asking again
                // gets the same answer (Apple's or a caching proxy's), and a
                // 75 every hour would read as "Apple was busy". Nothing of
                // the page is taken; the checkpoint saved keeps no token, so
                // the next run starts the window over too.
                guard restarts < Self.maximumWindowRestarts else {
                    throw SweepStop(kind: .failed, reason: "Apple answered the \(window) window's pagination token "
                        + "with the same token and more to come, also after the window was started over "
                        + "\(restarts) times: a loop that never ends; the next run starts the window over")
                }
                restarts += 1
                token = nil
                checkpoint.pending = nil
                try save(checkpoint)
                continue
            }
            limiter.succeeded()
            report.pages += 1
            try take(page.notifications, pass: window.pass, checkpoint: &checkpoint, report: &report)
            if page.hasMore, let next = page.paginationToken {
                token = next
                if window.pass == .full {
                    checkpoint.pending = SweepCheckpoint.PendingWindow(start: window.start, end: window.end,
                                                                       paginationToken: next)
                }
                try save(checkpoint)
            } else {
                if window.pass == .full {
                    checkpoint.completedThrough = window.end
                    checkpoint.pending = nil
                }
                try save(checkpoint)
                return
            }
        }
    }

    /// Drops (or lists) each notification not dropped before. A failures-
    /// pass page's newly spooled notifications are ones Apple could not
    /// deliver: their span (and a minute) is reported as a gap
    /// (ReconcileGaps) before the page's checkpoint is saved.
    private func take(_ notifications: [HistoryNotification], pass: SweepWindow.Pass,
                      checkpoint: inout SweepCheckpoint, report: inout SweepReport) throws(SweepStop) {
        var undelivered: ClosedRange<Int64>?
        for notification in notifications {
            report.found += 1
            if let uuid = notification.notificationUUID, checkpoint.spooled[uuid] != nil { continue }
            if let listing {
                listing(notification)
            } else {
                do {
                    try submission.drop(notification.spoolBody)
                } catch {
                    throw SweepStop(kind: .failed, reason: "cannot drop into the spool: \(error); "
                        + "the next run fetches this window again")
                }
            }
            report.spooled += 1
            if pass == .failures, let date = notification.signedDate {
                undelivered = min(undelivered?.lowerBound ?? date, date)...max(undelivered?.upperBound ?? date, date)
            }
            // Only the failures pass, which reads the same 8 days every run,
            // remembers what it dropped. The full pass reads each window
            // once: remembering all it dropped made the checkpoint, written
            // whole after every page, hold every notification of 9 days (a
            // busy app's: tens of megabytes a page, and past 64 MiB a file
            // no run could read). One that fails after the full pass took it
            // is dropped once more, which the supersede rule absorbs.
            if pass == .failures, let uuid = notification.notificationUUID {
                checkpoint.spooled[uuid] = notification.signedDate ?? clock.wallMilliseconds
            }
        }
        if let undelivered, !dryRun {
            try store.reportGap(ReconcileGap(source: "sweep", from: undelivered.lowerBound,
                                             to: undelivered.upperBound + 60_000))
        }
    }

    private func save(_ checkpoint: SweepCheckpoint) throws(SweepStop) {
        guard !dryRun else { return }
        try store.saveCheckpoint(checkpoint)
    }
}
