// EngineClock: the engine's sense of time, injected so tests drive it by hand.
// Delays are scheduled on a monotonic clock (a wall-clock jump neither stalls
// nor floods the queue); only persisted times use the wall clock.
import Dispatch
import Glibc
import Synchronization

/// Monotonic time to schedule on, wall time to persist.
package protocol EngineClock: Sendable {
    /// Monotonic time since an arbitrary origin; never goes back.
    var now: Duration { get }
    /// Wall-clock milliseconds since 1970; may jump either way.
    var wallMilliseconds: Int64 { get }
    /// Suspends until `now >= deadline`. Throws CancellationError if the
    /// task is cancelled first.
    func sleep(until deadline: Duration) async throws
}

/// The real clocks: CLOCK_BOOTTIME (keeps counting across suspend) and
/// CLOCK_REALTIME. Sleeping is a one-shot `asyncAfter` rather than
/// `Task.sleep`, which on Linux re-arms a one-second timer until its deadline
/// and so wakes the process every second while a retry waits.
package struct SystemClock: EngineClock {
    /// Where the timers fire; their handlers only resume a continuation.
    private static let timers = DispatchQueue(label: "txrecon.timers")

    package init() {}

    package var now: Duration {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    package var wallMilliseconds: Int64 { Timestamp.nowMilliseconds() }

    package func sleep(until deadline: Duration) async throws {
        let remaining = deadline - now
        guard remaining > .zero else { return try Task.checkCancellation() }
        let wait = TimerWait()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Past 292 years in nanoseconds Int64 overflows: such a wait
                // is forever (configured spans are at most ten years).
                let (seconds, attoseconds) = remaining.components
                let nanoseconds = seconds >= Int64.max / 1_000_000_000 - 1 ? Int.max
                    : Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
                wait.start(continuation, after: .nanoseconds(nanoseconds), on: Self.timers)
            }
        } onCancel: {
            wait.cancel()
        }
    }
}

/// One sleeping task's wait: resumes its continuation exactly once, when its
/// timer fires or when the task is cancelled, whichever comes first. A
/// cancelled wait cancels its timer too, so a retry pulled in early (an
/// operator's `retry`, a recovery) leaves no wake-up behind at the old time.
private final class TimerWait: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var timer: Timer?
        var cancelled = false
    }

    /// The dispatch timer, to cancel it from whichever thread gets there
    /// first. `@unchecked Sendable`: libdispatch sources are documented as
    /// safe to cancel from any thread, and `source` is never reassigned;
    /// swift-corelibs-libdispatch just does not mark the protocol Sendable.
    private final class Timer: @unchecked Sendable {
        let source: any DispatchSourceTimer
        init(_ source: any DispatchSourceTimer) { self.source = source }
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Void, any Error>, after delay: DispatchTimeInterval,
               on queue: DispatchQueue) {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + delay, leeway: .milliseconds(1))
        source.setEventHandler { [self] in finish(with: .success(())) }
        let timer = Timer(source)
        let cancelledAlready = state.withLock { state -> Bool in
            guard !state.cancelled else { return true }
            state.continuation = continuation
            state.timer = timer
            return false
        }
        if cancelledAlready {
            // libdispatch refuses to release a source that was never activated.
            source.cancel()
            source.resume()
            return continuation.resume(throwing: CancellationError())
        }
        source.resume()
    }

    func cancel() {
        state.withLock { $0.cancelled = true }
        finish(with: .failure(CancellationError()))
    }

    private func finish(with result: Result<Void, any Error>) {
        let (continuation, timer) = state.withLock { state in
            defer { state.continuation = nil; state.timer = nil }
            return (state.continuation, state.timer)
        }
        timer?.source.cancel()
        continuation?.resume(with: result)
    }
}
