// MetricsExporter: keeps a metrics file in [Metrics] TextfileDirectory= up to
// date for node_exporter's textfile collector: the daemon's `txrecon.prom`
// (from its DaemonStatus), the receiver's `txrecon-receive.prom` (from its
// ReceiveStatistics). Each program owns its file and replaces it whole.
//
// Each rewrite is atomic: the text goes to a temporary name in the same
// directory (one node_exporter ignores, as it does not end in .prom), is
// made world-readable (node_exporter runs as another user; the unit's UMask
// would leave it 0640), and is renamed over txrecon.prom. Rewrites are
// coalesced to at most one per `interval` (CoalescedWriter); the timer exists
// only between a change and its write, so an idle daemon does not wake up for
// metrics. Not fsynced: after a crash a lost update is rewritten at the next
// change. Runs on its own dispatch queue (file writes block).
// Reports: a warning when the file cannot be written (once, until a write
// succeeds again, then a notice).
import Glibc

final class MetricsExporter<Snapshot: Sendable>: Sendable {
    /// Default least time between rewrites: node_exporter is typically
    /// scraped every 15 s or more, so fresher data would go unseen.
    static var defaultInterval: Duration { .seconds(5) }

    /// The metrics file's path.
    let path: String
    private let writer: CoalescedWriter<Snapshot>

    /// Writes `fileName` in `directory`; `clock` times the coalescing
    /// (monotonic `now` only). `render` makes the file's text of a snapshot;
    /// its flag is false for the last one, written at a clean stop.
    init(directory: String, fileName: String, log: any LogSink, interval: Duration = defaultInterval,
         clock: any EngineClock = SystemClock(), render: @escaping @Sendable (Snapshot, _ running: Bool) -> String) {
        let path = directory + "/" + fileName
        // Hidden, and without the .prom suffix node_exporter looks for.
        let temporaryPath = directory + "/." + fileName + ".tmp"
        self.path = path
        writer = CoalescedWriter(
            label: "txrecon.metrics", interval: interval, clock: clock, log: log,
            failed: { error in
                LogEntry(.warning, "cannot write the metrics file \(path): \(error); give the txrecon user write "
                         + "access to the directory and list it in ReadWritePaths= "
                         + "(docs/metrics.md: \"How do I scrape metrics?\"); retried with the next change")
            },
            recovered: LogEntry(.notice, "the metrics file \(path) is written again")
        ) { snapshot, running, written in
            let text = render(snapshot, running)
            guard text != written else { return }
            try MetricsTextFile.replace(path, with: text, through: temporaryPath)
            written = text
        }
    }

    /// Records the newest status; writes it now or within the interval.
    func publish(_ status: Snapshot) {
        writer.publish(status)
    }

    /// Writes the latest status at once, waiting for the write.
    func flushNow() {
        writer.flushNow()
    }

    /// Writes the final status (rendered as not running), waiting for the
    /// write; later publications change nothing.
    func stop(final status: Snapshot) {
        writer.stop(final: status)
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
