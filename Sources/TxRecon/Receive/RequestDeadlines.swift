// RequestDeadlines: the deadline for a whole request, which libmicrohttpd
// does not have (it closes only connections idle for its timeout, and a
// client that sends a byte just before that never is: slowloris).
//
// Each connection's clock starts when it opens and again when its last
// request ends, so the deadline covers a request's head, its body and a
// keep-alive wait before the next one (a request is seen only once its head
// is whole, which is what a slowloris client never sends). A request whose
// body has come whole is not cut while it is judged and written (a slow
// disk's fsync is not the client's doing, and a cut would only bring the
// body again), and its clock starts again for the answer. IdleTimeout= is
// shorter than RequestTimeout= (the configuration refuses otherwise), so a
// connection that sends nothing is closed by libmicrohttpd as idle first,
// and what is cut here is a client that sends, too slowly. A thread of its own, awake only while
// connections are open, shuts down the socket of one past its deadline
// (libmicrohttpd's connection thread then sees the end and closes it). Also
// counts the requests in flight, for a stop that lets them finish.
import Dispatch
import Glibc
import Synchronization

final class RequestDeadlines: Sendable {
    private struct Connection {
        var socket: Int32
        var since: ContinuousClock.Instant
        var client = "unknown"
        /// Between requests (one ended, the next not begun): a stop need
        /// not wait for it. A connection opens not idle, for its first
        /// request may be on its way.
        var idle = false
        /// Its whole request is being judged and written (`handling`): not
        /// cut, for the body has come and a cut now would only make the
        /// client send it again.
        var handling = false
        var cut = false
    }

    private struct State {
        var connections: [UInt: Connection] = [:]
        var draining = false
        var stopped = false

        var busy: Bool { connections.values.contains { !$0.idle } }
    }

    let timeout: Duration
    private let state = Mutex(State())
    /// Wakes the watching thread when the first connection opens or on stop.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled, while draining, when no connection is busy any more.
    private let quiet = DispatchSemaphore(value: 0)

    /// The clock deadlines are kept on; tests pass one they move.
    private let now: @Sendable () -> ContinuousClock.Instant

    init(timeout: Duration, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.timeout = timeout
        self.now = now
    }

    func started(connection: OpaquePointer, socket: Int32, client: String) {
        let first = state.withLock { state in
            state.connections[UInt(bitPattern: connection)] = Connection(socket: socket, since: now(), client: client)
            return state.connections.count == 1
        }
        if first { wake.signal() }
    }

    func closed(connection: OpaquePointer) {
        update { $0.connections.removeValue(forKey: UInt(bitPattern: connection)) }
    }

    func requestStarted(connection: OpaquePointer) {
        state.withLock { state in
            state.connections[UInt(bitPattern: connection)]?.idle = false
        }
    }

    /// Runs `handle` for a connection whose request has come whole; its
    /// clock starts again when `handle` returns, for the answer to be taken.
    func handling<T>(connection: OpaquePointer, _ handle: () -> T) -> T {
        let key = UInt(bitPattern: connection)
        state.withLock { $0.connections[key]?.handling = true }
        defer {
            state.withLock { state in
                state.connections[key]?.handling = false
                state.connections[key]?.since = now()
            }
        }
        return handle()
    }

    func requestEnded(connection: OpaquePointer) {
        update { state in
            state.connections[UInt(bitPattern: connection)]?.since = now()
            state.connections[UInt(bitPattern: connection)]?.idle = true
        }
    }

    /// Applies `change`, and tells a waiting stop when nothing is busy any more.
    private func update(_ change: (inout State) -> Void) {
        let quietNow = state.withLock { state in
            let wasBusy = state.busy
            change(&state)
            return state.draining && wasBusy && !state.busy
        }
        if quietNow { quiet.signal() }
    }

    /// Waits until every open connection is between requests (or closed),
    /// or `grace` has passed: requests in flight, and ones whose first
    /// bytes have come, finish.
    func waitUntilIdle(upTo grace: Duration) {
        let busy = state.withLock { state in
            state.draining = true
            return state.busy
        }
        guard busy else { return }
        _ = quiet.wait(timeout: .now() + .milliseconds(Int(grace.milliseconds)))
    }
    /// Starts the thread that cuts requests past their deadline, calling
    /// `cut` with each one's client.
    func startWatching(_ cut: @escaping @Sendable (String) -> Void) throws(ThreadStartError) {
        try DedicatedThread.start(name: "txrecon-deadline") { [self] in
            while true {
                // Asleep while no connection is open: no timer while idle.
                let (stopped, open) = state.withLock { ($0.stopped, !$0.connections.isEmpty) }
                if stopped { return }
                if !open {
                    wake.wait()
                    continue
                }
                _ = wake.wait(timeout: .now() + .seconds(1))
                for client in cutOverdue() { cut(client) }
            }
        }
    }

    func stopWatching() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    /// Shuts down the sockets of requests past their deadline; their clients.
    func cutOverdue() -> [String] {
        let now = self.now()
        return state.withLock { state in
            var clients: [String] = []
            for (key, connection) in state.connections
            where !connection.cut && !connection.handling && now - connection.since > timeout {
                shutdown(connection.socket, Int32(SHUT_RDWR))
                state.connections[key]?.cut = true
                clients.append(connection.client)
            }
            return clients
        }
    }
}
