// ConnectionLimits: MaxConnections= and MaxConnectionsPerAddress=, kept by
// txrecon rather than by libmicrohttpd, so that a connection refused at them
// is seen. libmicrohttpd 0.9.75 closes a connection past its own limits as
// soon as it accepts it, before any callback (its accept policy callback is
// asked only after those checks), so such a refusal could be neither logged
// nor counted. Here the accept policy callback asks `admit`, which compares
// the connections open, in all and from the client's address, with the
// limits; the refused connection is closed by libmicrohttpd as before, and
// the caller reports it.
//
// The counts follow libmicrohttpd's connection notifications (`opened` at
// STARTED, `closed` at CLOSED). libmicrohttpd calls the accept policy, then
// STARTED for the same connection, then CLOSED at its clean-up, all on its
// one listening thread, the same thread that accepts the next connection:
// so `admit` always sees every connection admitted before, and the counts
// are the ones libmicrohttpd keeps for its own limits, which HTTPServer sets
// one higher as a backstop that never binds. Reports nothing.
import Synchronization

final class ConnectionLimits: Sendable {
    /// Which limit refused a connection. The raw value names it in the
    /// receiver's status file; `label` in its metrics.
    enum Limit: String, CaseIterable, Sendable {
        case connections
        case connectionsPerAddress

        /// The configuration key, for people.
        var setting: String { self == .connections ? "MaxConnections=" : "MaxConnectionsPerAddress=" }
        /// The Prometheus label value.
        var label: String { self == .connections ? "connections" : "connections_per_address" }
    }

    private struct State {
        /// Open connections by libmicrohttpd's handle, and their client.
        var open: [UInt: String] = [:]
        /// Open connections by client address, for those with any.
        var byAddress: [String: Int] = [:]
    }

    /// Connections at once, in all and from one address.
    let connections: Int
    let connectionsPerAddress: Int
    private let state = Mutex(State())

    init(connections: Int, connectionsPerAddress: Int) {
        self.connections = connections
        self.connectionsPerAddress = connectionsPerAddress
    }

    /// The limit a new connection from `client` would pass, or nil when it
    /// may be served.
    func admit(_ client: String) -> Limit? {
        state.withLock { state in
            if state.open.count >= connections { return .connections }
            if state.byAddress[client, default: 0] >= connectionsPerAddress { return .connectionsPerAddress }
            return nil
        }
    }

    /// The value of `limit`.
    func value(of limit: Limit) -> Int {
        limit == .connections ? connections : connectionsPerAddress
    }

    /// `connection` (libmicrohttpd's handle, as bits) from `client` is served.
    func opened(_ connection: UInt, client: String) {
        state.withLock { state in
            guard state.open.updateValue(client, forKey: connection) == nil else { return }
            state.byAddress[client, default: 0] += 1
        }
    }

    /// `connection` is closed.
    func closed(_ connection: UInt) {
        state.withLock { state in
            guard let client = state.open.removeValue(forKey: connection) else { return }
            let left = state.byAddress[client, default: 1] - 1
            state.byAddress[client] = left > 0 ? left : nil
        }
    }

    /// Connections open now.
    var open: Int { state.withLock { $0.open.count } }
}
