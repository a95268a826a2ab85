// SweepPlan: which date ranges one run of `txrecon sweep` asks Apple for,
// in order, computed from the clock, the [Sweep] settings and the checkpoint.
//
// 1. Failures pass: `onlyFailures` over the last 8 days (Apple's retries
//    end about 6.5 days after the first try; the rest is slack), so what
//    Apple could not deliver is recovered on the next run, checkpoint or not.
// 2. Full pass: from the checkpoint minus Overlap= (the first run: 8 days
//    back) to now minus 2 minutes (history entries Apple is still writing are
//    left for the next run). This catches notifications Apple delivered but
//    whose body never reached the spool. A window interrupted by the last run
//    comes first, unchanged, so its saved pagination token can still be used;
//    the windows after it start Overlap= before its end.
//    A checkpoint dated later than now (its `completedThrough` or its
//    pending window's end) was written by a clock once ahead: Apple took
//    that run's future end dates as its own now, so what the checkpoint
//    claims past that moment was never read. It counts as none (the full
//    pass starts 8 days back, as a first run does), and `checkpointAhead`
//    says so. Re-reading only drops copies the daemon supersedes; trusting
//    it would skip, silently, everything until the clock catches up. "As
//    now" would not do: how long the clock was ahead is unknown.
//
// Both passes are cut into windows of at most Window=, and neither reaches
// further back than Apple keeps history (180 days in production, 30 in the
// sandbox, less one hour so that clocks a little apart do not make Apple
// refuse the start date). A full pass that had to be cut short that way says
// so in `clamped`: those notifications cannot be recovered any more. Pure.

/// One date range paged as one series of requests.
struct SweepWindow: Sendable, Equatable, CustomStringConvertible {
    enum Pass: String, Sendable {
        /// `onlyFailures=true`.
        case failures
        /// Every notification; the checkpoint follows this pass.
        case full
    }

    var pass: Pass
    /// Inclusive, UNIX milliseconds.
    var start: Int64
    /// Exclusive, UNIX milliseconds.
    var end: Int64

    /// The request body for every page of this window.
    var request: NotificationHistoryRequest {
        NotificationHistoryRequest(startDate: start, endDate: end, onlyFailures: pass == .failures)
    }

    var description: String {
        "\(pass.rawValue) \(Timestamp.rfc3339(milliseconds: start))..\(Timestamp.rfc3339(milliseconds: end))"
    }
}

/// The windows of one run, in the order they are paged.
struct SweepPlan: Sendable, Equatable {
    /// How far back the failures pass looks: 8 days.
    static let failuresLookback: Duration = .seconds(8 * 86_400)
    /// How close to now the passes end: 2 minutes before.
    static let settleTime: Duration = .seconds(120)
    /// How far inside Apple's history limit the earliest start stays: 1 hour.
    static let limitMargin: Duration = .seconds(3600)

    var windows: [SweepWindow]
    /// The part of the full pass's range that is older than Apple's history
    /// (UNIX milliseconds); nil when nothing was cut.
    var clamped: Range<Int64>?
    /// The checkpoint's date that was later than `now` and so set aside
    /// (UNIX milliseconds); nil when the checkpoint was taken.
    var checkpointAhead: Int64?

    /// The plan at `now` (wall clock, UNIX milliseconds).
    init(now: Int64, settings: SweepSettings, checkpoint: SweepCheckpoint) {
        let end = now - Self.settleTime.milliseconds
        let earliest = now - settings.environment.historyLimit.milliseconds + Self.limitMargin.milliseconds
        let window = settings.window.milliseconds

        let failuresStart = max(now - Self.failuresLookback.milliseconds, earliest)
        windows = Self.cut(.failures, from: failuresStart, to: end, window: window)

        var pending = checkpoint.pending
        var completedThrough = checkpoint.completedThrough
        checkpointAhead = [completedThrough, pending?.end].compactMap { $0 }.filter { $0 > now }.max()
        if checkpointAhead != nil {
            pending = nil
            completedThrough = nil
        }
        var fullStart = pending?.start
            ?? completedThrough.map { $0 - settings.overlap.milliseconds }
            ?? failuresStart
        clamped = nil
        if fullStart < earliest {
            clamped = fullStart..<earliest
            fullStart = earliest
            pending = nil
        }
        if let pending, pending.end <= end {
            windows.append(SweepWindow(pass: .full, start: pending.start, end: pending.end))
            // The windows after it overlap its end as any checkpoint's:
            // what Apple recorded late near that end is read again.
            fullStart = pending.end - settings.overlap.milliseconds
        }
        windows += Self.cut(.full, from: fullStart, to: end, window: window)
    }

    /// [start, end) in consecutive windows of at most `window` milliseconds.
    private static func cut(_ pass: SweepWindow.Pass, from start: Int64, to end: Int64, window: Int64) -> [SweepWindow] {
        var windows: [SweepWindow] = []
        var next = start
        while next < end {
            let stop = min(next + window, end)
            windows.append(SweepWindow(pass: pass, start: next, end: stop))
            next = stop
        }
        return windows
    }
}
