// LedgerKeyFilter: which destination-and-key pairs the ledger may hold, in
// memory, so that intake's supersede look-up of a key the ledger never
// recorded (every fresh drop of a drain) costs no SQLite query: about 5 µs
// of CPU per drop otherwise (bench/FINDINGS.md).
//
// Built from the ledger on a thread of its own after it opens (a scan of
// its smallest whole index: seconds at ten million rows, which neither
// READY nor the writer waits for); until then every look-up asks SQLite.
// The writer adds each key before it commits it, so a key the ledger holds
// is never answered "no". Sized for the rows it holds plus room to grow
// (12 bits a key, about 1 % "maybe" for a key it does not hold); past that
// it is built again, bigger, up to `maximumBytes`: the daemon's memory is
// bounded whatever the ledger holds (4 MiB: 1 % up to about 2.8 million
// keys, a fifth at ten million, each "maybe" one SQLite look-up as without
// a filter). Thread-safe. Reports nothing.
import Dispatch
import Synchronization

final class LedgerKeyFilter: Sendable {
    private struct State: ~Copyable {
        var bits: BlockedBloomFilter
        var capacity: Int
        var count = 0
        var ready = false
    }

    private let state: Mutex<State>

    /// Bits per key held: about 1 % false positives.
    static let bitsPerKey = 12
    /// The most memory one filter takes.
    static let maximumBytes = 4 << 20

    /// Whether its bits are as many as `maximumBytes` allows: a bigger one
    /// cannot be built.
    private let isLargest: Bool

    /// A filter with room for `capacity` keys (fewer past `maximumBytes`, a
    /// parameter for tests); not ready until `markReady`. nil when its
    /// memory cannot be mapped.
    init?(capacity: Int, maximumBytes: Int = LedgerKeyFilter.maximumBytes) {
        let bits = min(capacity * Self.bitsPerKey, maximumBytes * 8)
        guard let filter = BlockedBloomFilter(bits: bits) else { return nil }
        isLargest = bits == maximumBytes * 8
        state = Mutex(State(bits: filter, capacity: capacity))
    }

    /// The memory its bits take.
    var memoryBytes: Int { state.withLock { $0.bits.wordCount * 8 } }

    /// Keys it has room for before it answers "maybe" too often.
    var capacity: Int { state.withLock { $0.capacity } }

    /// Whether more keys were added than it has room for, and a bigger
    /// filter would help.
    var isFull: Bool { !isLargest && state.withLock { $0.count > $0.capacity } }

    func add(destination: String, key: ItemKey) {
        let hash = Self.hash(destination, key)
        state.withLock { state in
            state.bits.add(hash: hash)
            state.count += 1
        }
    }

    var isReady: Bool { state.withLock { $0.ready } }

    /// Left when the filter is ready.
    private let readiness: DispatchGroup = {
        let group = DispatchGroup()
        group.enter()
        return group
    }()

    /// Every key the ledger held when its scan began is in.
    func markReady() {
        let first = state.withLock { state in
            defer { state.ready = true }
            return !state.ready
        }
        if first { readiness.leave() }
    }

    /// Waits until `markReady` or `timeout`; whether it is ready.
    func waitUntilReady(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return readiness.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }

    /// False only when the ledger holds no row for `key` at `destination`;
    /// true while not ready.
    func mayHold(destination: String, key: ItemKey) -> Bool {
        let hash = Self.hash(destination, key)
        return state.withLock { state in !state.ready || state.bits.mayContain(hash: hash) }
    }

    /// The pair as one byte string, the destination, a NUL and the key, hashed.
    private static func hash(_ destination: String, _ key: ItemKey) -> UInt64 {
        var text = destination + "\u{0}" + key.rawValue
        return text.withUTF8 { BlockedBloomFilter.hash(UnsafeRawBufferPointer($0)) }
    }
}
