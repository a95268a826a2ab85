// EngineClock: the engine's sense of time, injected so tests drive it by hand.
// Delays are scheduled on a monotonic clock (a wall-clock jump neither stalls
// nor floods the queue); only persisted times use the wall clock.
import Glibc

/// Monotonic time to schedule on, wall time to persist.
public protocol EngineClock: Sendable {
    /// Monotonic time since an arbitrary origin; never goes back.
    var now: Duration { get }
    /// Wall-clock milliseconds since 1970; may jump either way.
    var wallMilliseconds: Int64 { get }
    /// Suspends until `now >= deadline`. Throws CancellationError if the
    /// task is cancelled first.
    func sleep(until deadline: Duration) async throws
}

/// The real clocks: CLOCK_BOOTTIME (keeps counting across suspend, like
/// Swift's ContinuousClock, which does the sleeping) and CLOCK_REALTIME.
public struct SystemClock: EngineClock {
    public init() {}

    public var now: Duration {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    public var wallMilliseconds: Int64 { Timestamp.nowMilliseconds() }

    public func sleep(until deadline: Duration) async throws {
        let remaining = deadline - now
        if remaining > .zero {
            try await ContinuousClock().sleep(for: remaining, tolerance: .milliseconds(5))
        } else {
            try Task.checkCancellation()
        }
    }
}
