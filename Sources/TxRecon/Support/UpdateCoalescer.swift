// UpdateCoalescer: when to write out something that changes often but should
// be written at most once per interval (the STATUS line, the metrics file): the first change
// after a quiet spell is written at once, later ones are gathered until the
// interval since the last write has passed, and the last change is always
// written. Pure bookkeeping on instants the caller passes in; the caller
// owns the timer, which exists only between a change and its write.
// Reports: nothing.

struct UpdateCoalescer: Sendable {
    /// The least time between two writes.
    let interval: Duration
    private var lastWrite: Duration?
    private var scheduled = false

    init(interval: Duration) {
        self.interval = interval
    }

    /// Something changed at `now` (monotonic). Returns how long to wait
    /// before writing, or nil when a write is already scheduled (it will
    /// pick this change up).
    mutating func changed(at now: Duration) -> Duration? {
        guard !scheduled else { return nil }
        scheduled = true
        guard let lastWrite else { return .zero }
        return max(.zero, lastWrite + interval - now)
    }

    /// The scheduled write ran at `now`; the next change schedules anew.
    mutating func wrote(at now: Duration) {
        scheduled = false
        lastWrite = now
    }
}
