// SweepClock: time as `txrecon sweep` sees it. The wall clock dates the
// history windows, the checkpoint and the tokens; the monotonic clock paces
// requests; `sleep` is the only way the sweep waits (rate limit, Retry-After,
// backoff). Tests pass a manual clock whose sleep only moves time forward, so
// no unit test waits for real. Reports nothing.
import Glibc

/// The clocks and the wait the sweep uses. `sleep` blocks the calling
/// thread: only the sweep's dedicated thread calls it.
package protocol SweepClock: Sendable {
    /// Monotonic time since an arbitrary origin; never goes back.
    var now: Duration { get }
    /// Wall-clock milliseconds since 1970.
    var wallMilliseconds: Int64 { get }
    /// Blocks the calling thread for `duration` (nothing when not positive).
    func sleep(for duration: Duration)
}

/// The real clocks (those of `SystemClock`) and nanosleep(2).
struct SystemSweepClock: SweepClock {
    private let clock = SystemClock()

    var now: Duration { clock.now }
    var wallMilliseconds: Int64 { clock.wallMilliseconds }

    func sleep(for duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        // A signal cuts the sleep short: sleep what is left.
        while nanosleep(&request, &remaining) == -1 && errno == EINTR {
            request = remaining
        }
    }
}
