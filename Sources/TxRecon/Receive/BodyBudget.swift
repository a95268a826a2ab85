// BodyBudget: how many bytes of large request bodies the receiver holds at
// once, across all connections. Each connection may read a body up to
// MaxFileSize= before it is judged; without a bound over all of them, a
// client holding MaxConnections= connections, each trickling a body just
// under the limit, made the receiver hold that product (256 MiB with the
// defaults, without bound for a large MaxFileSize=). A body's first
// `freeBytes` are its connection's own (MaxConnections= of them at most),
// so that clients holding the budget with large bodies cannot turn away an
// App Store notification of a few KiB; what a body holds beyond them is
// taken from the budget, and a body that would take it past its limit is
// read on and dropped, and answered 503 with Retry-After. The bytes are
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

    private let held = Atomic<Int>(0)
    private let limitBytes: Atomic<Int>

    init(limit: Int) { limitBytes = Atomic(limit) }

    var limit: Int { limitBytes.load(ordering: .relaxed) }

    /// Changes the limit (a reload's new MaxFileSize=); bodies held already
    /// keep what they took.
    func setLimit(_ bytes: Int) { limitBytes.store(bytes, ordering: .relaxed) }

    /// Takes `count` bytes if they fit under the limit; false, taking
    /// nothing, if not.
    func take(_ count: Int) -> Bool {
        var current = held.load(ordering: .relaxed)
        while true {
            guard current <= limit - count else { return false }
            let (exchanged, original) = held.compareExchange(expected: current, desired: current + count,
                                                              ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back `count` bytes taken before.
    func give(_ count: Int) {
        held.subtract(count, ordering: .relaxed)
    }

    /// The bytes held now.
    var inUse: Int { held.load(ordering: .relaxed) }
}
