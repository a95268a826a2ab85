// MetricsExporter: keeps a metrics file in [Metrics] TextfileDirectory= up to
// date for node_exporter's textfile collector: the daemon's `txrecon.prom`
// (from its DaemonStatus), the receiver's `txrecon-receive.prom` (from its
// ReceiveStatistics). Each program owns its file and replaces it whole.
//
// Each rewrite is atomic: the text goes to a temporary name in the same
// directory (one node_exporter ignores, as it does not end in .prom), is
// made world-readable (node_exporter runs as another user; the unit's UMask
// would leave it 0640), and is renamed over txrecon.prom. Rewrites are
// coalesced to at most one per `interval`; the timer exists only between a
// change and its write, so an idle daemon does not wake up for metrics. Not
// fsynced: after a crash a lost update is rewritten at the next change.
// Runs on its own dispatch queue (file writes block).
// Reports: a warning when the file cannot be written (once, until a write
// succeeds again, then a notice).
import Dispatch
import Glibc
import Synchronization

final class MetricsExporter<Snapshot: Sendable>: Sendable {
    private struct State {
        var latest: Snapshot?
        var coalescer: UpdateCoalescer
        var running = true
        var lastText = ""
        var failing = false
    }

    /// Default least time between rewrites: node_exporter is typically
    /// scraped every 15 s or more, so fresher data would go unseen.
    static var defaultInterval: Duration { .seconds(5) }

    /// The metrics file's path.
    let path: String
    private let temporaryPath: String
    /// The file's text for a snapshot; the flag is false for the last one,
    /// written at a clean stop.
    private let render: @Sendable (Snapshot, _ running: Bool) -> String
    private let clock: any EngineClock
    private let log: any LogSink
    private let queue = DispatchQueue(label: "txrecon.metrics")
    private let state: Mutex<State>

    /// Writes `fileName` in `directory`; `clock` times the coalescing
    /// (monotonic `now` only).
    init(directory: String, fileName: String, log: any LogSink, interval: Duration = defaultInterval,
         clock: any EngineClock = SystemClock(), render: @escaping @Sendable (Snapshot, _ running: Bool) -> String) {
        path = directory + "/" + fileName
        // Hidden, and without the .prom suffix node_exporter looks for.
        temporaryPath = directory + "/." + fileName + ".tmp"
        self.render = render
        self.clock = clock
        self.log = log
        state = Mutex(State(coalescer: UpdateCoalescer(interval: interval)))
    }

    /// Records the newest status; writes it now or within the interval.
    func publish(_ status: Snapshot) {
        let now = clock.now
        let delay = state.withLock { state -> Duration? in
            guard state.running else { return nil }
            state.latest = status
            return state.coalescer.changed(at: now)
        }
        guard let delay else { return }
        if delay == .zero {
            queue.async { self.flush() }
        } else {
            queue.asyncAfter(deadline: .now() + .milliseconds(Int(delay.milliseconds) + 1)) { self.flush() }
        }
    }

    /// Writes the latest status at once, waiting for the write.
    func flushNow() {
        queue.sync { self.flush() }
    }

    /// Writes the final status (rendered as not running), waiting for the
    /// write; later publications change nothing.
    func stop(final status: Snapshot) {
        state.withLock { state in
            state.latest = status
            state.running = false
        }
        flushNow()
    }

    private func flush() {
        let text = state.withLock { state -> String? in
            state.coalescer.wrote(at: clock.now)
            guard let latest = state.latest else { return nil }
            let text = render(latest, state.running)
            return text == state.lastText ? nil : text
        }
        guard let text else { return }
        do {
            try write(text)
        } catch {
            let firstFailure = state.withLock { state in
                defer { state.failing = true }
                return !state.failing
            }
            if firstFailure {
                log.write(LogEntry(.warning, "cannot write the metrics file \(path): \(error); give the txrecon user "
                                   + "write access to the directory and list it in ReadWritePaths= "
                                   + "(docs/metrics.md: \"How do I scrape metrics?\"); retried with the next change"))
            }
            return
        }
        let recovered = state.withLock { state in
            defer {
                state.failing = false
                state.lastText = text
            }
            return state.failing
        }
        if recovered { log.write(LogEntry(.notice, "the metrics file \(path) is written again")) }
    }

    private func write(_ text: String) throws(SpoolError) {
        try SystemCall.unlinkIfPresent(temporaryPath)
        try SystemCall.writeNewFile(temporaryPath, Array(text.utf8), mode: 0o644, sync: false)
        do throws(SpoolError) {
            guard chmod(temporaryPath, 0o644) == 0 else { throw SpoolError("chmod", temporaryPath) }
            try SystemCall.rename(temporaryPath, path)
        } catch {
            unlink(temporaryPath)
            throw error
        }
    }
}

extension MetricsExporter where Snapshot == DaemonStatus {
    static var daemonFileName: String { "txrecon.prom" }

    /// The daemon's `txrecon.prom`; `startedAt`: its start (ms since 1970).
    convenience init(directory: String, startedAt: Int64, version: String, log: any LogSink,
                     interval: Duration = defaultInterval, clock: any EngineClock = SystemClock()) {
        self.init(directory: directory, fileName: Self.daemonFileName, log: log, interval: interval, clock: clock) {
            MetricsReport.render($0, startedAt: startedAt, version: version, running: $1)
        }
    }
}
