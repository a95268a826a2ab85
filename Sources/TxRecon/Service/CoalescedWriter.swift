// CoalescedWriter: the one way txrecon keeps something up to date that
// changes far more often than anyone reads it: the daemon's STATUS= line and
// status file, its metrics file, the receiver's status and metrics. The
// newest snapshot is kept under a lock; writes happen on a serial queue of
// their own (file writes block), coalesced by UpdateCoalescer to at most one
// per interval, the last change always written; the timer exists only
// between a change and its write, so nothing wakes while nothing changes.
// After `stop` the final snapshot is written and later changes are ignored.
// Reports: what `write` throws, once until a write succeeds again (then the
// `recovered` line, if any).
import Dispatch
import Synchronization

final class CoalescedWriter<Snapshot: Sendable>: Sendable {
    /// Writes a snapshot (`running` false for the final one); throws to
    /// report a failure, which the next change retries. `written`: what the
    /// writes so far left for it (the last line or text written, "" at
    /// first), so that it can skip a snapshot that changes nothing it shows.
    typealias Write = @Sendable (_ snapshot: Snapshot, _ running: Bool, _ written: inout String) throws -> Void

    private struct State {
        var latest: Snapshot?
        var coalescer: UpdateCoalescer
        var running = true
        var failing = false
        var written = ""
    }

    private let queue: DispatchQueue
    private let state: Mutex<State>
    private let clock: any EngineClock
    private let write: Write
    private let log: any LogSink
    /// The warning for a first failed write, and the notice for the first
    /// write after failures (nil: none).
    private let failed: @Sendable (any Error) -> LogEntry
    private let recovered: LogEntry?

    /// `label` names the queue (as thread dumps show it); `clock` times the
    /// coalescing (monotonic `now` only).
    init(label: String, interval: Duration, initial: Snapshot? = nil, clock: any EngineClock = SystemClock(),
         log: any LogSink, failed: @escaping @Sendable (any Error) -> LogEntry, recovered: LogEntry? = nil,
         write: @escaping Write) {
        queue = DispatchQueue(label: label)
        state = Mutex(State(latest: initial, coalescer: UpdateCoalescer(interval: interval)))
        self.clock = clock
        self.write = write
        self.log = log
        self.failed = failed
        self.recovered = recovered
    }

    /// The newest snapshot.
    var latest: Snapshot? { state.withLock { $0.latest } }

    /// Records `snapshot` as the newest; writes it now or within the interval.
    func publish(_ snapshot: Snapshot) {
        update { $0 = snapshot }
    }

    /// Changes the newest snapshot under the lock (so that concurrent
    /// changes are kept in the order made, and `change` may hand the result
    /// on in that order); writes it now or within the interval.
    func update(_ change: (inout Snapshot?) -> Void) {
        let now = clock.now
        let delay = state.withLock { state -> Duration? in
            guard state.running else { return nil }
            change(&state.latest)
            return state.coalescer.changed(at: now)
        }
        guard let delay else { return }
        if delay == .zero {
            queue.async { self.flush() }
        } else {
            queue.asyncAfter(deadline: .now() + .milliseconds(Int(delay.milliseconds) + 1)) { self.flush() }
        }
    }

    /// Writes the newest snapshot at once, waiting for the write.
    func flushNow() {
        queue.sync { flush() }
    }

    /// Writes `final` (or the newest snapshot) as no longer running, waiting
    /// for the write; later changes are ignored.
    func stop(final: Snapshot? = nil) {
        state.withLock { state in
            if let final { state.latest = final }
            state.running = false
        }
        flushNow()
    }

    private func flush() {
        let (snapshot, running, before) = state.withLock { state in
            state.coalescer.wrote(at: clock.now)
            return (state.latest, state.running, state.written)
        }
        var written = before
        guard let snapshot else { return }
        // Written back whatever happens: the queue runs one flush at a time.
        defer { state.withLock { $0.written = written } }
        do {
            try write(snapshot, running, &written)
        } catch {
            let first = state.withLock { state in
                defer { state.failing = true }
                return !state.failing
            }
            if first { log.write(failed(error)) }
            return
        }
        let wasFailing = state.withLock { state in
            defer { state.failing = false }
            return state.failing
        }
        if wasFailing, let recovered { log.write(recovered) }
    }
}
