// DeadlineQueue: the keys waiting for their next attempt, earliest first.
// A binary heap with lazy deletion: rescheduling a key pushes a new entry and
// the engine skips entries that no longer match the key's current deadline.

struct DeadlineQueue {
    struct Entry {
        var deadline: Duration
        /// Breaks ties in arrival order, so equal deadlines are first come, first served.
        var sequence: UInt64
        var key: ItemKey
        /// `deadline` in whole nanoseconds (saturated), what the heap
        /// compares: Duration's own comparison is a call into the standard
        /// library, made twice per level of every sift. Deadlines apart by
        /// less than a nanosecond are taken in arrival order.
        fileprivate var order: Int64
    }

    private var heap: [Entry] = []
    private var nextSequence: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var first: Entry? { heap.first }

    mutating func push(_ key: ItemKey, at deadline: Duration) {
        heap.append(Entry(deadline: deadline, sequence: nextSequence, key: key, order: Self.nanoseconds(deadline)))
        nextSequence &+= 1
        siftUp(heap.count - 1)
    }

    @discardableResult
    mutating func popFirst() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
        return first
    }

    /// Drops every entry; used when the heap holds mostly stale entries.
    mutating func removeAll() { heap.removeAll(keepingCapacity: true) }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        heap[a].order != heap[b].order ? heap[a].order < heap[b].order : heap[a].sequence < heap[b].sequence
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, overflowed) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowed ? (seconds < 0 ? .min : .max) : sum
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, precedes(left, smallest) { smallest = left }
            if right < heap.count, precedes(right, smallest) { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
