// StatusPublication: the engine's status and when it is handed on, one
// owned value. In a drain attempts end thousands of times a second, and
// what reads the status (STATUS=, the status file, the metrics) takes it at
// most once a second: while attempts are in flight the status an attempt
// changed is handed on at most every `Settings.statusInterval`
// (UpdateCoalescer, as the status and metrics files are written), and at
// once when the last one ends; an armed flush hands it on even if every
// attempt hangs until Timeout=. Building and handing it on each time was a
// few percent of a drain's instructions (bench/FINDINGS.md). The engine
// fills in its counts, owns the flush's timer, and decides when a change
// is an attempt's.

struct StatusPublication {
    var status = EngineStatus()
    private var coalescer: UpdateCoalescer
    /// The flush armed for a change not handed on yet.
    private var flush: EngineTimer?
    private let publish: @Sendable (EngineStatus) -> Void

    init(interval: Duration, publish: @escaping @Sendable (EngineStatus) -> Void) {
        self.coalescer = UpdateCoalescer(interval: interval)
        self.publish = publish
    }

    /// A reload's `Settings.statusInterval`.
    mutating func setInterval(_ interval: Duration) {
        guard interval != coalescer.interval else { return }
        coalescer = UpdateCoalescer(interval: interval)
    }

    /// Hands the status on now.
    mutating func publish(at now: Duration) {
        coalescer.wrote(at: now)
        publish(status)
    }

    /// An attempt in flight changed the status at `now`: how long until it
    /// is handed on (zero: now), or nil when a flush is armed or due
    /// already and picks the change up.
    mutating func changedByAttempt(at now: Duration) -> Duration? {
        guard flush == nil else { return nil }
        return coalescer.changed(at: now)
    }

    /// The flush for the change `changedByAttempt` put off.
    mutating func armed(_ timer: EngineTimer) { flush = timer }

    /// The flush has fired, or is no longer wanted.
    mutating func endFlush() {
        flush?.cancel()
        flush = nil
    }
}
