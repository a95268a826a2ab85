// HandoffQueue: hands work from async code to dedicated threads.
//
// Producers never wait; consumers (dedicated threads only, never the
// cooperative pool) sleep on a condition variable while the queue is empty,
// so an idle daemon makes no wake-ups here. Touches no files, reports nothing.
import Glibc

/// A FIFO of elements taken by blocking consumers, closed once at shutdown.
///
/// `@unchecked Sendable`: every stored property except the two pthread
/// primitives is read and written only while `mutex` is held, and the
/// primitives themselves are made for use from many threads. They live on the
/// heap because pthread objects must not move in memory.
final class HandoffQueue<Element: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Taken elements are moved out (left nil), so clearing the array once
    /// all are taken has nothing left to release.
    private var elements: [Element?] = []
    private var head = 0
    private var closed = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Appends `element` and wakes one waiting consumer. Returns the element
    /// back when the queue is already closed, so the caller can answer it.
    func put(_ element: Element) -> Element? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !closed else { return element }
        elements.append(element)
        pthread_cond_signal(condition)
        return nil
    }

    /// Blocks until an element is available and returns it, or returns nil
    /// once the queue is closed. Call only from a dedicated thread.
    func take() -> Element? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while head == elements.count && !closed {
            pthread_cond_wait(condition, mutex)
        }
        guard !closed else { return nil }
        let element = elements[head].take()!
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        }
        return element
    }

    /// Closes the queue: every waiting and future `take` returns nil and
    /// every future `put` is refused. Returns the elements nobody took.
    func close() -> [Element] {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !closed else { return [] }
        closed = true
        let left = elements[head...].map { $0! }
        elements.removeAll()
        head = 0
        pthread_cond_broadcast(condition)
        return left
    }
}
