// UntidiedRecords: the keys delivered after failing whose failure record
// (queue/KEY.state) has not followed its item into done/ yet. A delivery
// moves only the item (one rename on the delivery path, which after an
// outage is every item's); the records follow in batches while no attempt
// is due, or even then once too many wait, so that a daemon that is never
// idle keeps queue/ tidy. A value the engine keeps; the moves are its own.
// Reports nothing.

struct UntidiedRecords {
    /// Records moved per engine job (about 3 ms here), so that intake and
    /// completions wait no longer.
    static let batchSize = 64
    /// Past this many waiting records they are moved even while attempts
    /// are due.
    static let limit = 16_384

    private var keys = Set<ItemKey>()
    /// Whether a job that moves a batch is enqueued.
    var scheduled = false

    var isEmpty: Bool { keys.isEmpty }
    var count: Int { keys.count }

    /// Whether they must be moved now, due attempts or not.
    var overLimit: Bool { keys.count >= Self.limit }

    mutating func add(_ key: ItemKey) {
        keys.insert(key)
    }

    /// Takes `key`'s record out of the waiting ones; whether it was there
    /// (then the caller moves it at once: a new snapshot of the key comes).
    mutating func take(_ key: ItemKey) -> Bool {
        keys.remove(key) != nil
    }

    /// Up to `batchSize` records to move now.
    mutating func nextBatch() -> [ItemKey] {
        var batch: [ItemKey] = []
        while batch.count < Self.batchSize, let key = keys.popFirst() { batch.append(key) }
        return batch
    }

    /// Every waiting record, for a stop.
    mutating func all() -> [ItemKey] {
        defer { keys.removeAll() }
        return Array(keys)
    }
}
