// ArrivalOrder: the keys in queue/ by when their snapshot arrived, so the
// engine can tell the oldest queued item's receivedAt without scanning every
// entry on each status (the queue may hold 100 000 keys).
//
// A heap with lazy deletion, like DeadlineQueue (which it reuses, ordered by
// receivedAt instead of a deadline): the engine notes every arrival, and
// entries whose key left the queue or arrived again later are skipped when
// they reach the front. When stale entries outnumber the live ones the heap
// is rebuilt, so memory stays proportional to the queue.
// Reports: nothing.

struct ArrivalOrder {
    private var heap = DeadlineQueue()

    /// Records that `key` is queued with this receivedAt (ms since 1970).
    mutating func note(_ key: ItemKey, receivedAt: Int64) {
        heap.push(key, at: .milliseconds(receivedAt))
    }

    /// The earliest receivedAt (ms since 1970) among the keys still queued
    /// with the time noted for them; nil when none is. `receivedAt` answers
    /// a key's current time, nil when it is not queued; `queued` is how
    /// many keys are.
    mutating func oldest(queued: Int, receivedAt: (ItemKey) -> Int64?) -> Int64? {
        if heap.count > 2 * queued + 1024 { compact(receivedAt) }
        while let first = heap.first, receivedAt(first.key) != first.deadline.milliseconds {
            heap.popFirst()
        }
        return heap.first?.deadline.milliseconds
    }

    /// Keeps only live entries: O(n), after at least n stale ones piled
    /// up, so O(1) per arrival on average.
    private mutating func compact(_ receivedAt: (ItemKey) -> Int64?) {
        heap = DeadlineQueue(heapifying: heap.entries.filter { receivedAt($0.key) == $0.deadline.milliseconds })
    }
}
