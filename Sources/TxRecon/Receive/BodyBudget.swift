// BodyBudget: how many bytes of large request bodies the receiver holds at
// once, across all connections. Each connection may read a body up to
// MaxFileSize= before it is judged; without a bound over all of them, a
// client holding MaxConnections= connections, each trickling a body just
// under the limit, made the receiver hold that product (256 MiB with the
// defaults, without bound for a large MaxFileSize=). A body's first
// `freeBytes` are its connection's own (MaxConnections= of them at most),
// so that clients holding the budget with large bodies cannot turn away an
// App Store notification of a few KiB; what a body holds beyond them is
// taken from the budget, each client address up to its share of the
// connections, and a body that would take the budget or that share past
// its limit is read on and dropped, and answered 503 with Retry-After. The bytes are
// given back when the request ends. Counted are the bytes read; the arrays
// behind them may hold up to twice as much.
import Synchronization

final class BodyBudget: Sendable {
    /// The budget for `maximumBodySize`: room for at least two bodies of
    /// the largest size, and never less than 64 MiB (thousands of App Store
    /// notifications of a few KiB).
    static func limit(forMaximumBodySize maximumBodySize: Int) -> Int {
        max(64 << 20, maximumBodySize.multipliedReportingOverflow(by: 2).overflow ? Int.max : maximumBodySize * 2)
    }

    /// What each body reads before it takes from the budget: more than any
    /// App Store notification or StoreKit 2 upload.
    static let freeBytes = 64 << 10

    private struct State {
        var limit: Int
        var held = 0
        /// What each client address holds, for those holding anything.
        var byAddress: [String: Int] = [:]
    }

    private let state: Mutex<State>
    /// The part of the limit one address may hold: its share of the
    /// connections (MaxConnectionsPerAddress= of MaxConnections=), so that
    /// holding the whole budget takes as many addresses as holding every
    /// connection does.
    private let addressShare: Double

    init(limit: Int, connections: Int = 1, connectionsPerAddress: Int = 1) {
        state = Mutex(State(limit: limit))
        addressShare = connections > 0 ? min(1, Double(max(1, connectionsPerAddress)) / Double(connections)) : 1
    }

    var limit: Int { state.withLock { $0.limit } }

    /// Changes the limit (a reload's new MaxFileSize=); bodies held already
    /// keep what they took.
    func setLimit(_ bytes: Int) { state.withLock { $0.limit = bytes } }

    /// Takes `count` bytes for a body from `address` if they fit under the
    /// limit and under the address's share of it; false, taking nothing,
    /// if not.
    func take(_ count: Int, from address: String) -> Bool {
        state.withLock { state in
            let share = Int((Double(state.limit) * addressShare).rounded(.down))
            let ownHeld = state.byAddress[address, default: 0]
            guard state.held <= state.limit - count, ownHeld <= share - count else { return false }
            state.held += count
            state.byAddress[address] = ownHeld + count
            return true
        }
    }

    /// Gives back `count` bytes taken before for `address`.
    func give(_ count: Int, from address: String) {
        guard count > 0 else { return }
        state.withLock { state in
            state.held -= count
            let left = state.byAddress[address, default: 0] - count
            state.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// The bytes held now.
    var inUse: Int { state.withLock { $0.held } }
}
