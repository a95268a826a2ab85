// DenseDictionary: a dictionary for many keys whose values are large, laid
// out so that its memory follows its count.
//
// Swift's Dictionary stores a key and a value per bucket and keeps at most
// three quarters of a power of two of buckets in use, so n entries reserve
// room for between 4n/3 and 8n/3 values, and it never shrinks.
// PendingItems' 72-byte entries, one per pending key, took 262,144 buckets
// at 100,000 keys: 22 MiB, the largest part of the daemon's memory with a
// backlog, kept for good once the backlog was gone (bench/FINDINGS.md,
// "The pending keys' table"). Here the dictionary maps each key to a
// 4-byte position, and the keys and values sit in two arrays of the count
// (whose capacity grows by doubling, as an array's does); a removal moves
// the last entry into the hole. A large table that falls to a quarter of
// its room is copied into one of half the room (amortized O(1) per
// removal), so a drained backlog gives its memory back.
//
// Positions change on insertion and removal: one from `position(of:)` is
// valid until the next of either. Iteration order is arbitrary, as a
// Dictionary's.

struct DenseDictionary<Key: Hashable, Value> {
    private var positions: [Key: Int32] = [:]
    private var keyList: [Key] = []
    private var values: [Value] = []

    /// A table with room for at most this many keeps its storage however
    /// few it holds: a drain that empties it after every item must not
    /// allocate it each time.
    private static var shrinksAbove: Int { 4_096 }

    init() {}

    var count: Int { keyList.count }
    var isEmpty: Bool { keyList.isEmpty }
    /// The keys, in the table's (arbitrary) order.
    var keys: [Key] { keyList }
    /// The most entries any of its stores has room for (what its memory
    /// is sized by).
    var storageCapacity: Int { Swift.max(positions.capacity, keyList.capacity, values.capacity) }

    subscript(key: Key) -> Value? {
        get { positions[key].map { values[Int($0)] } }
        set {
            if let newValue { store(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// Where `key`'s value is, for reading and changing it without another
    /// look-up (`subscript(position:)`, `remove(at:)`).
    func position(of key: Key) -> Int? { positions[key].map(Int.init) }

    /// Read and changed in place, as an array's element: reading or
    /// changing one field neither copies the value nor retains what it
    /// refers to.
    subscript(position position: Int) -> Value {
        _read { yield values[position] }
        _modify { yield &values[position] }
    }

    /// Stores `value` under `key`, in one look-up: a Dictionary's
    /// default subscript stores the next position if the key is new.
    private mutating func store(_ value: Value, forKey key: Key) {
        precondition(keyList.count < Int(Int32.max), "DenseDictionary holds at most Int32.max entries")
        let end = Int32(keyList.count)
        let position = Self.value(of: &positions[key, default: end])
        if position == end {
            keyList.append(key)
            values.append(value)
        } else {
            values[Int(position)] = value
        }
    }

    /// Reads through `inout`, so that the default subscript's modify
    /// accessor (which inserts the default) is the one used.
    private static func value(of position: inout Int32) -> Int32 { position }

    /// Removes `key`'s entry; returns its value, if it had one.
    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let position = positions.removeValue(forKey: key) else { return nil }
        return removeRow(Int(position))
    }

    /// Removes the entry at `position`; returns its value.
    @discardableResult
    mutating func remove(at position: Int) -> Value {
        positions.removeValue(forKey: keyList[position])
        return removeRow(position)
    }

    mutating func reserveCapacity(_ minimumCapacity: Int) {
        positions.reserveCapacity(minimumCapacity)
        keyList.reserveCapacity(minimumCapacity)
        values.reserveCapacity(minimumCapacity)
    }

    /// Takes row `position` out of the arrays, its key already out of
    /// `positions`: the last row moves into its place.
    private mutating func removeRow(_ position: Int) -> Value {
        let last = keyList.count - 1
        if position != last {
            keyList.swapAt(position, last)
            values.swapAt(position, last)
            positions[keyList[position]] = Int32(position)
        }
        keyList.removeLast()
        let value = values.removeLast()
        if keyList.count <= keyList.capacity / 4, keyList.capacity > Self.shrinksAbove { shrink() }
        return value
    }

    /// Copies the entries into stores of twice their count.
    private mutating func shrink() {
        var smaller = DenseDictionary()
        smaller.reserveCapacity(keyList.count * 2)
        for (key, value) in zip(keyList, values) { smaller.store(value, forKey: key) }
        self = smaller
    }
}

extension DenseDictionary: Sequence {
    func makeIterator() -> Zip2Sequence<[Key], [Value]>.Iterator { zip(keyList, values).makeIterator() }
}
