// DeadlineQueue: the keys waiting for their next attempt, earliest first.
// A binary heap with lazy deletion: rescheduling a key pushes a new entry and
// the engine skips entries that no longer match the key's current deadline.

struct DeadlineQueue {
    struct Entry {
        /// Breaks ties in arrival order, so equal deadlines are first come, first served.
        var sequence: UInt64
        var key: ItemKey
        /// The deadline in whole nanoseconds (saturated), what the heap
        /// compares and all it keeps of it: Duration's own comparison is a
        /// call into the standard library, made twice per level of every
        /// sift, and a Duration takes twice the room (the heap holds an
        /// entry per pending key). Deadlines apart by less than a
        /// nanosecond are taken in arrival order.
        fileprivate var order: Int64

        var deadline: Duration { .nanoseconds(order) }
    }

    private var heap: [Entry] = []
    private var nextSequence: UInt64 = 0

    init() {}

    /// A queue of `entries` as they are (sequence numbers kept), ordered in
    /// O(n) rather than by n pushes.
    init(heapifying entries: [Entry]) {
        heap = entries
        nextSequence = (entries.map(\.sequence).max() ?? 0) &+ 1
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var first: Entry? { heap.first }
    /// Every entry, in no particular order.
    var entries: [Entry] { heap }

    mutating func push(_ key: ItemKey, at deadline: Duration) {
        heap.append(Entry(sequence: nextSequence, key: key, order: deadline.wholeNanoseconds))
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

    /// Whether `heap[a]` comes before `heap[b]`; on the buffer, so that a
    /// comparison reads two integers without copying the entries (and
    /// retaining and releasing their keys) out of the array.
    private static func precedes(_ heap: UnsafeMutableBufferPointer<Entry>, _ a: Int, _ b: Int) -> Bool {
        heap[a].order != heap[b].order ? heap[a].order < heap[b].order : heap[a].sequence < heap[b].sequence
    }

    private mutating func siftUp(_ index: Int) {
        heap.withUnsafeMutableBufferPointer { heap in
            var child = index
            while child > 0 {
                let parent = (child - 1) / 2
                guard Self.precedes(heap, child, parent) else { return }
                heap.swapAt(child, parent)
                child = parent
            }
        }
    }

    private mutating func siftDown(_ index: Int) {
        heap.withUnsafeMutableBufferPointer { heap in
            var parent = index
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < heap.count, Self.precedes(heap, left, smallest) { smallest = left }
                if right < heap.count, Self.precedes(heap, right, smallest) { smallest = right }
                guard smallest != parent else { return }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}
