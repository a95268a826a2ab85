// Recorded: collects every value a component publishes (the engine's status,
// the ledger's) and lets a test wait until one satisfies a condition (the
// engine has processed an answer, the writer has written), instead of
// sleeping.
import Synchronization
import TxRecon

package typealias StatusRecorder = Recorded<EngineStatus>

package final class Recorded<Value: Sendable>: Sendable {
    private struct Waiter {
        var predicate: @Sendable (Value) -> Bool
        var continuation: CheckedContinuation<Value, Never>
    }

    private struct State {
        var history: [Value] = []
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    package init() {}

    package var latest: Value? { state.withLock { $0.history.last } }
    package var history: [Value] { state.withLock { $0.history } }
    /// How many values were recorded so far.
    package var count: Int { state.withLock { $0.history.count } }

    package func record(_ value: Value) {
        let woken = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            state.history.append(value)
            let ready = state.waiters.filter { $0.predicate(value) }.map(\.continuation)
            state.waiters.removeAll { $0.predicate(value) }
            return ready
        }
        for continuation in woken { continuation.resume(returning: value) }
    }

    /// Returns the first recorded value (the latest one included) that
    /// satisfies `predicate`.
    @discardableResult
    package func waitFor(_ predicate: @escaping @Sendable (Value) -> Bool) async -> Value {
        await waitFor(after: nil, predicate)
    }

    /// Returns the first value recorded after the first `count` (nil: the
    /// latest one included) that satisfies `predicate`.
    @discardableResult
    package func waitFor(after count: Int?, _ predicate: @escaping @Sendable (Value) -> Bool) async -> Value {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Value? in
                let candidates = count.map { state.history.dropFirst($0) } ?? state.history.suffix(1)
                if let found = candidates.first(where: predicate) { return found }
                state.waiters.append(Waiter(predicate: predicate, continuation: continuation))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}
