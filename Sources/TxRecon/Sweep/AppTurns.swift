// AppTurns: how long one run of `txrecon sweep` or `txrecon reconcile` may
// talk to Apple, and how that time is shared among the apps it goes through
// (AppRuns). Their units stop a run at TimeoutStartSec=1h with SIGTERM,
// which leaves no report, no log entry and no last-run record, and, while
// one app has hours of work, no turn at all for the apps after it, run
// after run. So a run asks for 55 minutes and ends by itself, and each
// app's turn ends at an equal share of what is left when it begins.
//
// Pure: the caller reads the clock and stops an app's work (and its rate
// limiter's waits) at its turn's end. Reports nothing.

/// The turns of one run's apps, on a `SweepClock`'s monotonic time.
struct AppTurns {
    /// How long a run asks Apple, all its apps together: 55 minutes, within
    /// txrecon-sweep.service's and txrecon-reconcile.service's
    /// TimeoutStartSec=1h, so that a run ends by itself with its report
    /// rather than killed without one.
    static let runningTime: Duration = .seconds(55 * 60)

    /// When the turn of the app that begins at `now` ends: an equal share
    /// of what is left of the run (ending at `runEnds`) among the
    /// `appsLeft` apps not run yet, this one included. An app with little
    /// to do leaves its time to the ones after it; one with hours of work
    /// (a backlog to page, a gap that makes every live subscription due)
    /// can no longer keep the apps after it from their turn, run after run.
    static func turnEnds(now: Duration, runEnds: Duration, appsLeft: Int) -> Duration {
        now + (runEnds - now) / max(appsLeft, 1)
    }

    /// When the whole run ends (`runningTime` after it began).
    let runEnds: Duration
    /// The apps whose turn has not begun.
    private var appsLeft: Int

    /// A run beginning at `now` that goes through `apps` apps
    /// (`AppRuns.count`).
    init(now: Duration, apps: Int) {
        runEnds = now + Self.runningTime
        appsLeft = apps
    }

    /// When the turn of the next app, beginning at `now`, ends; that app's
    /// turn counts as begun.
    mutating func next(now: Duration) -> Duration {
        defer { appsLeft -= 1 }
        return Self.turnEnds(now: now, runEnds: runEnds, appsLeft: appsLeft)
    }
}
