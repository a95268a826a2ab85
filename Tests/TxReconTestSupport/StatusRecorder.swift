// StatusRecorder: collects every status the engine publishes and lets a test
// wait until one satisfies a condition (the engine has processed an answer),
// instead of sleeping.
import Synchronization
import TxRecon

package final class StatusRecorder: Sendable {
    private struct State {
        var history: [EngineStatus] = []
        var waiters: [(predicate: @Sendable (EngineStatus) -> Bool, continuation: CheckedContinuation<EngineStatus, Never>)] = []
    }

    private let state = Mutex(State())

    package init() {}

    package var latest: EngineStatus? { state.withLock { $0.history.last } }
    package var history: [EngineStatus] { state.withLock { $0.history } }

    package func record(_ status: EngineStatus) {
        let woken = state.withLock { state -> [CheckedContinuation<EngineStatus, Never>] in
            state.history.append(status)
            let ready = state.waiters.filter { $0.predicate(status) }.map(\.continuation)
            state.waiters.removeAll { $0.predicate(status) }
            return ready
        }
        for continuation in woken { continuation.resume(returning: status) }
    }

    /// Returns the first published status (the latest one included) that
    /// satisfies `predicate`.
    @discardableResult
    package func waitFor(_ predicate: @escaping @Sendable (EngineStatus) -> Bool) async -> EngineStatus {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> EngineStatus? in
                if let latest = state.history.last, predicate(latest) { return latest }
                state.waiters.append((predicate, continuation))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}
