// ManualSweepClock: the sweep's clock for unit tests. Sleeping returns at
// once and moves both clocks forward by the time asked for, and every sleep
// is recorded, so a test can check that the sweep waited for Retry-After or
// backed off without any test waiting for real.
import Synchronization
import TxRecon

package final class ManualSweepClock: SweepClock {
    private struct State {
        var now: Duration = .seconds(1000)
        var wall: Int64
        var sleeps: [Duration] = []
    }

    private let state: Mutex<State>

    /// Starts at `wallMilliseconds` (UNIX milliseconds) on the wall clock.
    package init(wallMilliseconds: Int64) {
        state = Mutex(State(wall: wallMilliseconds))
    }

    package var now: Duration { state.withLock { $0.now } }
    package var wallMilliseconds: Int64 { state.withLock { $0.wall } }

    /// Every positive sleep so far, in order.
    package var sleeps: [Duration] { state.withLock { $0.sleeps } }

    package func sleep(for duration: Duration) {
        guard duration > .zero else { return }
        state.withLock { state in
            state.sleeps.append(duration)
            state.now += duration
            state.wall += duration.milliseconds
        }
    }

    /// Moves both clocks forward, as time between two runs.
    package func advance(by duration: Duration) {
        state.withLock { state in
            state.now += duration
            state.wall += duration.milliseconds
        }
    }
}
