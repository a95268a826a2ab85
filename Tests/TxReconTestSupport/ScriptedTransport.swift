// ScriptedTransport: a Transport that answers from a script per item key, so
// engine tests decide every backend answer. Records each request, tracks how
// many are in flight, and can hold a request open until the test lets go.
// Exchanges run on threads of their own, where they may block, as they would
// on a real transport's workers.
import Dispatch
import Synchronization
import TxRecon

package final class ScriptedTransport: Transport {
    package enum Reply: Sendable {
        case status(Int, retryAfter: String? = nil, body: String = "")
        case failure(TransportFailure)
        /// Stay in flight until `releaseHeld(with:)`.
        case hang
    }

    private struct State {
        var scripts: [String: [Reply]] = [:]
        var defaultReply: Reply
        var requests: [DeliveryRequest] = []
        var inFlight = 0
        var maximumInFlight = 0
        var held: [DispatchSemaphore] = []
        var releaseReply = Reply.status(200)
        var requestWaiters = CountWaiters()
        var finished = 0
        var finishWaiters = CountWaiters()
    }

    /// Tests waiting for a count to reach theirs.
    private struct CountWaiters {
        private var waiting: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func add(_ count: Int, _ continuation: CheckedContinuation<Void, Never>) {
            waiting.append((count, continuation))
        }

        /// Removes and returns the waiters that `count` satisfies.
        mutating func satisfied(by count: Int) -> [CheckedContinuation<Void, Never>] {
            defer { waiting.removeAll { $0.count <= count } }
            return waiting.filter { $0.count <= count }.map(\.continuation)
        }
    }

    private let state: Mutex<State>
    /// Like a real transport's worker threads: at most this many exchanges
    /// run at once, however many the engine hands over, and they begin in
    /// the order the engine handed them over, as a real transport's queue
    /// serves them (a semaphore wakes its waiters in no set order, so a
    /// waiting exchange could be overtaken by later ones again and again).
    private let workers: Mutex<Workers>

    private struct Workers {
        var free: Int
        var waiting: [DispatchSemaphore] = []
    }

    package init(default reply: Reply = .status(200), workers: Int = 4) {
        state = Mutex(State(defaultReply: reply))
        self.workers = Mutex(Workers(free: workers))
    }

    /// Takes a worker now, or a place in line for one (in the caller's
    /// order); the returned semaphore, if any, is signalled at its turn.
    private func lineUp() -> DispatchSemaphore? {
        workers.withLock { workers -> DispatchSemaphore? in
            if workers.free > 0, workers.waiting.isEmpty {
                workers.free -= 1
                return nil
            }
            let turn = DispatchSemaphore(value: 0)
            workers.waiting.append(turn)
            return turn
        }
    }

    /// Hands the worker to the first in line, or frees it.
    private func finishTurn() {
        let next = workers.withLock { workers -> DispatchSemaphore? in
            guard !workers.waiting.isEmpty else {
                workers.free += 1
                return nil
            }
            return workers.waiting.removeFirst()
        }
        next?.signal()
    }

    /// Replies for `key`'s next requests, in order; the default after that.
    package func script(_ key: String, _ replies: [Reply]) {
        state.withLock { $0.scripts[key, default: []].append(contentsOf: replies) }
    }

    package func setDefault(_ reply: Reply) { state.withLock { $0.defaultReply = reply } }

    package var requests: [DeliveryRequest] { state.withLock { $0.requests } }
    package var maximumInFlight: Int { state.withLock { $0.maximumInFlight } }
    package var inFlight: Int { state.withLock { $0.inFlight } }

    /// Keys of the requests so far, in order (from Idempotency-Key).
    package var requestedKeys: [String] {
        requests.map { request in
            let idempotency = request.header("Idempotency-Key") ?? ""
            return String(idempotency[..<(idempotency.lastIndex(of: ":") ?? idempotency.endIndex)])
        }
    }

    /// Returns once at least `count` requests have arrived.
    package func waitForRequests(_ count: Int) async {
        await wait(until: count, of: \.requests.count, waiters: \.requestWaiters)
    }

    /// Returns once at least `count` exchanges have returned: each has then
    /// handed its result back to the engine.
    package func waitForFinishedExchanges(_ count: Int) async {
        await wait(until: count, of: \.finished, waiters: \.finishWaiters)
    }

    private func wait(until count: Int, of counted: KeyPath<State, Int> & Sendable,
                      waiters: WritableKeyPath<State, CountWaiters> & Sendable) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state[keyPath: counted] >= count { return true }
                state[keyPath: waiters].add(count, continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Answers every request held by `.hang`.
    package func releaseHeld(with reply: Reply) {
        let held = state.withLock { state -> [DispatchSemaphore] in
            defer { state.held.removeAll() }
            state.releaseReply = reply
            return state.held
        }
        for semaphore in held { semaphore.signal() }
    }

    /// Runs the exchange on a thread of its own (it blocks, as on a real
    /// transport's worker), with a `send` that answers from the script.
    package func start(_ exchange: TransportExchange) {
        // In line on the engine's thread, in its order, not the new thread's.
        let turn = lineUp()
        do {
            try DedicatedThread.start(name: "txrecon-test-send") {
                turn?.wait()
                defer { self.finishTurn() }
                exchange.run { request in self.answer(request) }
                let woken = self.state.withLock { state in
                    state.finished += 1
                    return state.finishWaiters.satisfied(by: state.finished)
                }
                for waiter in woken { waiter.resume() }
            }
        } catch {
            fatalError("cannot start a thread for a scripted exchange: \(error)")
        }
    }

    /// The scripted answer to `request`; blocks while it is `.hang`.
    private func answer(_ request: DeliveryRequest) -> TransportResult {
        let idempotency = request.header("Idempotency-Key") ?? ""
        let key = String(idempotency[..<(idempotency.lastIndex(of: ":") ?? idempotency.endIndex)])
        let semaphore = DispatchSemaphore(value: 0)
        let (reply, woken) = state.withLock { state -> (Reply, [CheckedContinuation<Void, Never>]) in
            state.requests.append(request)
            state.inFlight += 1
            state.maximumInFlight = max(state.maximumInFlight, state.inFlight)
            let reply: Reply
            if var script = state.scripts[key], !script.isEmpty {
                reply = script.removeFirst()
                state.scripts[key] = script
            } else {
                reply = state.defaultReply
            }
            if case .hang = reply { state.held.append(semaphore) }
            return (reply, state.requestWaiters.satisfied(by: state.requests.count))
        }
        for waiter in woken { waiter.resume() }
        let result: TransportResult
        if case .hang = reply {
            semaphore.wait()
            result = Self.result(state.withLock { $0.releaseReply })
        } else {
            result = Self.result(reply)
        }
        state.withLock { $0.inFlight -= 1 }
        return result
    }

    private static func result(_ reply: Reply) -> TransportResult {
        switch reply {
        case let .status(code, retryAfter, body): return .response(status: code, retryAfter: retryAfter, bodyPrefix: Array(body.utf8))
        case let .failure(failure): return .failure(failure)
        case .hang: return .failure(TransportFailure(.other, "released without a reply"))
        }
    }
}
