// DenseDictionary: a dictionary for many keys whose values are large, laid
// out so that its memory follows its count.
//
// Swift's Dictionary stores a key and a value per bucket and keeps at most
// three quarters of a power of two of buckets in use, so n entries reserve
// room for between 4n/3 and 8n/3 values. PendingItems' 72-byte entries,
// one per pending key, took 262,144 buckets at 100,000 keys: 22 MiB, the
// largest part of the daemon's memory with a backlog (bench/FINDINGS.md,
// "The pending keys' table"). Here the dictionary maps each key to a 4-byte
// position, and the keys and values sit in two arrays of the count (whose
// capacity grows by doubling, as an array's does); a removal moves the last
// entry into the hole. A table that empties after it was large gives its
// memory back.
//
// Positions change on insertion and removal: one from `position(of:)` is
// valid until the next of either. Iteration order is arbitrary, as a
// Dictionary's.

struct DenseDictionary<Key: Hashable, Value> {
    private var positions: [Key: Int32] = [:]
    private var keyList: [Key] = []
    private var values: [Value] = []

    /// Below this capacity an emptied table keeps its storage: a drain that
    /// empties it after every item must not allocate it again each time.
    private static var releasedAbove: Int { 4_096 }

    init() {}

    var count: Int { keyList.count }
    var isEmpty: Bool { keyList.isEmpty }
    /// The keys, in the table's (arbitrary) order.
    var keys: [Key] { keyList }
    /// How many entries it has room for before its arrays grow.
    var capacity: Int { Swift.min(keyList.capacity, values.capacity) }

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

    /// Stores `value` under `key`: a new key costs one look-up, as in a
    /// Dictionary (the position is stored as it is looked for).
    private mutating func store(_ value: Value, forKey key: Key) {
        precondition(keyList.count < Int(Int32.max), "DenseDictionary holds at most Int32.max entries")
        if let position = positions.updateValue(Int32(keyList.count), forKey: key) {
            // Already there: it keeps its position.
            positions[key] = position
            values[Int(position)] = value
        } else {
            keyList.append(key)
            values.append(value)
        }
    }

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
        if keyList.isEmpty, keyList.capacity > Self.releasedAbove { self = DenseDictionary() }
        return value
    }
}

extension DenseDictionary: Sequence {
    func makeIterator() -> Zip2Sequence<[Key], [Value]>.Iterator { zip(keyList, values).makeIterator() }
}
