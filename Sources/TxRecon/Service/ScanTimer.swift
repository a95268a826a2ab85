// ScanTimer: when a reaper (DoneReaper, ReceiptReaper) scans next. One
// wall-clock timer on the reaper's queue, armed only while something may
// expire, for the earliest expiry; scans at least `minimumInterval` apart
// (a tenth of the retention, between one minute and one hour), so a busy
// directory is not read every second. How a step of the wall clock is
// survived is decided here for both: the interval counts from the earlier
// of the last scan and now (a scan made while the clock ran ahead does not
// put the next one off), and a change (a delivery, a stored receipt) arms
// the timer for its own expiry whenever the one armed is later, or none is.
// The reaper's queue runs `arm` and the scans; `needsArming` and
// `armedFor` may be asked from any thread.
import Dispatch
import Synchronization

final class ScanTimer: Sendable {
    private struct State {
        var timer: (any DispatchSourceTimer)?
        var armedFor: Int64?
        var lastScan: Int64 = 0
    }

    let minimumInterval: Int64
    private let queue: DispatchQueue
    private let state = Mutex(State())

    /// `retention` (ms): how long the reaper keeps what it looks at.
    init(retention: Int64, queue: DispatchQueue) {
        minimumInterval = min(3_600_000, max(60_000, retention / 10))
        self.queue = queue
    }

    /// When the next scan is due (ms since 1970), if one is armed.
    var armedFor: Int64? { state.withLock { $0.armedFor } }

    /// Whether something that expires at `expiry` needs the timer armed.
    func needsArming(by expiry: Int64) -> Bool {
        state.withLock { ($0.armedFor ?? .max) > expiry }
    }

    /// A scan as if the wall clock read `now` begins: unarmed while it
    /// reads, so that a change behind the listing's position arms a timer
    /// of its own (run after the scan, on the same queue).
    func scanStarts(at now: Int64) {
        state.withLock { state in
            state.lastScan = now
            state.armedFor = nil
        }
    }

    /// Cancels the timer (a scan ended, or the reaper stops).
    func disarm() {
        state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            state.armedFor = nil
        }
    }

    /// Arms the timer to call `scan` at `expiry` (ms since 1970), or at the
    /// minimum interval after the last scan, unless it fires sooner already.
    func arm(at expiry: Int64, now: Int64 = Timestamp.nowMilliseconds(), _ scan: @escaping @Sendable () -> Void) {
        state.withLock { state in
            let at = max(expiry, min(state.lastScan, now) + minimumInterval)
            if let armed = state.armedFor, armed <= at { return }
            state.timer?.cancel()
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(wallDeadline: .now() + .milliseconds(Int(max(0, at - now))), leeway: .seconds(1))
            timer.setEventHandler(handler: scan)
            timer.resume()
            state.timer = timer
            state.armedFor = at
        }
    }
}
