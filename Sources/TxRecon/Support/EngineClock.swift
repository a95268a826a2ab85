// EngineClock: the engine's sense of time, injected so tests drive it by hand.
// Delays are scheduled on a monotonic clock (a wall-clock jump neither stalls
// nor floods the queue); only persisted times use the wall clock.
import Glibc

/// Monotonic time to schedule on, wall time to persist.
package protocol EngineClock: Sendable {
    /// Monotonic time since an arbitrary origin; never goes back.
    var now: Duration { get }
    /// Wall-clock milliseconds since 1970; may jump either way.
    var wallMilliseconds: Int64 { get }
    /// Runs `action` on `executor`'s thread once `now >= deadline`, unless
    /// the timer is cancelled first: the engine's timers, kept by its
    /// thread (ThreadExecutor.schedule), with no task per wait.
    func schedule(at deadline: Duration, on executor: ThreadExecutor,
                  _ action: @escaping @Sendable () -> Void) -> EngineTimer
}

/// The real clocks: CLOCK_BOOTTIME (keeps counting across suspend) and
/// CLOCK_REALTIME. Timers are the engine thread's own (ThreadExecutor's
/// timed wait), one wake-up at the deadline: not `Task.sleep`, which on
/// Linux re-arms a one-second timer until its deadline and so wakes the
/// process every second while a retry waits, and no libdispatch source.
package struct SystemClock: EngineClock {
    package init() {}

    package var now: Duration {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    package var wallMilliseconds: Int64 { Timestamp.nowMilliseconds() }

    package func schedule(at deadline: Duration, on executor: ThreadExecutor,
                          _ action: @escaping @Sendable () -> Void) -> EngineTimer {
        executor.schedule(at: deadline, action)
    }
}
