// ManualClock: an EngineClock that moves only when a test says so. Sleepers
// wake when `advance` passes their deadline; tests can wait until the engine
// has armed a timer for a given deadline, so nothing ever sleeps for real.
import Synchronization
import TxRecon

package final class ManualClock: EngineClock {
    private struct Sleeper {
        var id: Int
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Watcher {
        var predicate: @Sendable ([Duration]) -> Bool
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now: Duration = .seconds(1000)
        var wall: Int64 = 1_800_000_000_000
        var nextID = 0
        var sleepers: [Sleeper] = []
        var cancelled: Set<Int> = []
        var watchers: [Watcher] = []
    }

    private let state = Mutex(State())

    /// How far `now` moves at each reading: zero, or a nanosecond to be the
    /// system clock, which never reads the same twice.
    private let tick: Duration

    package init(tickPerReading tick: Duration = .zero) {
        self.tick = tick
    }

    package var now: Duration {
        state.withLock { state in
            state.now += tick
            return state.now
        }
    }
    package var wallMilliseconds: Int64 { state.withLock { $0.wall } }

    /// Deadlines of everyone sleeping right now, earliest first.
    package var sleeperDeadlines: [Duration] { state.withLock { $0.sleepers.map(\.deadline).sorted() } }

    package func sleep(until deadline: Duration) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resume, watchers) = state.withLock { state -> (Result<Void, any Error>?, [Watcher]) in
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (nil, Self.satisfiedWatchers(&state))
                }
                if let resume { continuation.resume(with: resume) }
                for watcher in watchers { watcher.continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The engine's timers, as sleepers of this clock (so `advance` fires
    /// them and `waitForSleeper` sees them): a task on `executor` that
    /// sleeps until `deadline`, then runs `action` there unless the timer
    /// was cancelled meanwhile (on the executor's thread, as the engine
    /// cancels, so the check and the cancel never race).
    package func schedule(at deadline: Duration, on executor: ThreadExecutor,
                          _ action: @escaping @Sendable () -> Void) -> EngineTimer {
        let cancelled = CancelFlag()
        let task = Task(executorPreference: executor) {
            do { try await self.sleep(until: deadline) } catch { return }
            guard !cancelled.isSet else { return }
            action()
        }
        return EngineTimer {
            cancelled.set()
            task.cancel()
        }
    }

    private final class CancelFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }

    /// Moves both clocks forward and wakes every sleeper now due.
    /// Returns how many were woken.
    @discardableResult
    package func advance(by interval: Duration) -> Int {
        let due = state.withLock { state -> [Sleeper] in
            state.now += interval
            state.wall += interval.milliseconds
            let due = state.sleepers.filter { $0.deadline <= state.now }
            state.sleepers.removeAll { $0.deadline <= state.now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
        return due.count
    }

    /// Moves the wall clock only, as an NTP step or an operator would.
    package func jumpWallClock(by milliseconds: Int64) {
        state.withLock { $0.wall += milliseconds }
    }

    /// Returns once someone sleeps until exactly `deadline`.
    package func waitForSleeper(until deadline: Duration) async {
        await waitForSleepers { $0.contains(deadline) }
    }

    /// Returns once the sleepers' deadlines satisfy `predicate`.
    package func waitForSleepers(_ predicate: @escaping @Sendable ([Duration]) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let satisfied = state.withLock { state -> Bool in
                if predicate(state.sleepers.map(\.deadline)) { return true }
                state.watchers.append(Watcher(predicate: predicate, continuation: continuation))
                return false
            }
            if satisfied { continuation.resume() }
        }
    }

    private static func satisfiedWatchers(_ state: inout State) -> [Watcher] {
        let deadlines = state.sleepers.map(\.deadline)
        let satisfied = state.watchers.filter { $0.predicate(deadlines) }
        state.watchers.removeAll { $0.predicate(deadlines) }
        return satisfied
    }
}
