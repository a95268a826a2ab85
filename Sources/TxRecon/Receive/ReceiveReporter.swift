// ReceiveReporter: what `txrecon receive` tells about itself while it runs:
// the counts of its answers (ReceiveStatistics) as the STATUS= line, as its
// status file in `<spool>/receive/` for `txrecon status`, and as
// `txrecon-receive.prom` when [Metrics] TextfileDirectory= is set.
//
// Connection threads record each answer under a lock; the writes happen on a
// queue of their own, coalesced to at most one a second (CoalescedWriter: a
// burst of a thousand requests is one write), and only between a change and
// its write: an idle receiver does not wake up. `stop` writes the last counts
// with `running` false.
// Reports: a warning when the status file cannot be written (once, until a
// write succeeds again).
import Glibc

final class ReceiveReporter: Sendable {
    static let interval: Duration = .seconds(1)

    /// Where it listens, for people: `127.0.0.1:8081`, `the socket systemd passed`.
    let listening: String
    private let metrics: MetricsExporter<ReceiveStatistics>?
    private let writer: CoalescedWriter<ReceiveStatistics>

    init(listening: String, directory: ReceiverStateDirectory, metricsDirectory: String?, version: String,
         health: any HealthNotifier, log: any LogSink) {
        let startedAt = Timestamp.nowMilliseconds()
        self.listening = listening
        metrics = metricsDirectory.map {
            MetricsExporter(directory: $0, fileName: ReceiveMetricsReport.fileName, log: log) {
                ReceiveMetricsReport.render($0, startedAt: startedAt, version: version, running: $1)
            }
        }
        writer = CoalescedWriter(
            label: "txrecon.receive-status", interval: Self.interval, initial: ReceiveStatistics(), log: log,
            failed: { error in
                LogEntry(.warning, "cannot write the receiver's status file: \(error); `txrecon status` shows older "
                         + "counts until it can (retried with the next request)")
            },
            recovered: LogEntry(.notice, "the receiver's status file \(directory.statusPath) is written again")
        ) { statistics, running, written in
            let line = Self.line(statistics, listening: listening)
            if running, line != written { health.notify("STATUS=" + line) }
            try directory.writeStatus(Self.document(statistics, line: line, running: running, listening: listening,
                                                    startedAt: startedAt))
            written = line
        }
    }

    /// The counts so far.
    var statistics: ReceiveStatistics { writer.latest ?? ReceiveStatistics() }

    func answered(_ status: Int, after latency: Duration) {
        changed { $0.answered(status, after: latency) }
    }

    /// `app`: the app of the per-app path it came on, if it did.
    func spooled(setAside: Bool, onPathOf app: String? = nil) {
        changed { $0.spooledOne(setAside: setAside, onPathOf: app) }
    }

    func cutAtDeadline() {
        changed { $0.cutAtDeadline() }
    }

    func refusedConnection(at limit: ConnectionLimits.Limit) {
        changed { $0.refusedConnection(at: limit) }
    }

    /// Writes the counts now (at READY=1).
    func flushNow() {
        writer.flushNow()
    }

    /// Writes the last counts as no longer running, waiting for the writes.
    func stop() {
        writer.stop()
        metrics?.stop(final: statistics)
    }

    /// The STATUS= line: "receiving on 127.0.0.1:8081: 1204 requests, 1190
    /// spooled, 14 refused", and ", 3 connections refused" when there were.
    static func line(_ statistics: ReceiveStatistics, listening: String) -> String {
        let refused = statistics.requests - (statistics.answers[200] ?? 0)
        var line = "receiving on \(listening): \(statistics.requests) requests, \(statistics.spooled) spooled"
        if refused > 0 { line += ", \(refused) refused" }
        if statistics.setAside > 0 { line += ", \(statistics.setAside) to be set aside" }
        if statistics.connectionsRefused > 0 { line += ", \(statistics.connectionsRefused) connections refused" }
        return line
    }

    private func changed(_ change: (inout ReceiveStatistics) -> Void) {
        writer.update { latest in
            // Changed in place: a copy would copy the counts' dictionaries
            // at every request.
            guard latest != nil else { return }
            change(&latest!)
            let statistics = latest!
            // Under the writer's lock: the connection threads' counts reach
            // the exporter in the order they were made, so that the file's
            // counters never go back (which Prometheus reads as a reset).
            // The exporter only stores the snapshot; it never calls back.
            metrics?.publish(statistics)
        }
    }

    private static func document(_ statistics: ReceiveStatistics, line: String, running: Bool, listening: String,
                                 startedAt: Int64) -> JSONValue {
        let answers = statistics.answers.sorted { $0.key < $1.key }.map { (String($0.key), JSONValue.integer($0.value)) }
        return .object([
            ("pid", .integer(getpid())), ("running", .bool(running)), ("listening", .string(listening)),
            ("startedAt", .string(Timestamp.rfc3339(milliseconds: startedAt))),
            ("updatedAt", .string(Timestamp.rfc3339(milliseconds: Timestamp.nowMilliseconds()))),
            ("status", .string(line)), ("requests", .integer(statistics.requests)), ("answers", .object(answers)),
            ("spooled", .integer(statistics.spooled)), ("setAside", .integer(statistics.setAside)),
            ("cutAtRequestTimeout", .integer(statistics.cut)),
            ("connectionsRefused", .object(ConnectionLimits.Limit.allCases.map {
                ($0.rawValue, .integer(statistics.refusedConnections[$0] ?? 0))
            })),
        ])
    }
}
