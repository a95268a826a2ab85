// ReceiveReporter: what `txrecon receive` tells about itself while it runs:
// the counts of its answers (ReceiveStatistics) as the STATUS= line, as its
// status file in `<spool>/receive/` for `txrecon status`, and as
// `txrecon-receive.prom` when [Metrics] TextfileDirectory= is set.
//
// Connection threads record each answer under a lock; the writes happen on a
// queue of their own, coalesced to at most one a second (a burst of a
// thousand requests is one write), and only between a change and its write:
// an idle receiver does not wake up. `stop` writes the last counts with
// `running` false.
// Reports: a warning when the status file cannot be written (once, until a
// write succeeds again).
import Dispatch
import Glibc
import Synchronization

final class ReceiveReporter: Sendable {
    private struct State {
        var statistics = ReceiveStatistics()
        var coalescer = UpdateCoalescer(interval: ReceiveReporter.interval)
        var running = true
        var lastLine = ""
        var failing = false
    }

    static let interval: Duration = .seconds(1)

    /// Where it listens, for people: `127.0.0.1:8081`, `the socket systemd passed`.
    let listening: String
    private let directory: ReceiverStateDirectory
    private let metrics: MetricsExporter<ReceiveStatistics>?
    private let health: any HealthNotifier
    private let log: any LogSink
    private let startedAt: Int64
    private let queue = DispatchQueue(label: "txrecon.receive-status")
    private let state = Mutex(State())

    init(listening: String, directory: ReceiverStateDirectory, metricsDirectory: String?, version: String,
         health: any HealthNotifier, log: any LogSink) {
        let startedAt = Timestamp.nowMilliseconds()
        self.listening = listening
        self.directory = directory
        self.health = health
        self.log = log
        self.startedAt = startedAt
        metrics = metricsDirectory.map {
            MetricsExporter(directory: $0, fileName: ReceiveMetricsReport.fileName, log: log) {
                ReceiveMetricsReport.render($0, startedAt: startedAt, version: version, running: $1)
            }
        }
    }

    /// The counts so far.
    var statistics: ReceiveStatistics { state.withLock { $0.statistics } }

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
        queue.sync { flush() }
    }

    /// Writes the last counts as no longer running, waiting for the writes.
    func stop() {
        state.withLock { $0.running = false }
        flushNow()
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
        let now = SystemClock().now
        let delay = state.withLock { state -> Duration? in
            change(&state.statistics)
            // Under the lock: the connection threads' counts reach the
            // exporter in the order they were made, so that the file's
            // counters never go back (which Prometheus reads as a reset).
            // The exporter only stores the snapshot; it never calls back.
            metrics?.publish(state.statistics)
            return state.running ? state.coalescer.changed(at: now) : nil
        }
        guard let delay else { return }
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(delay.milliseconds) + 1)) { self.flush() }
    }

    private func flush() {
        let now = SystemClock().now
        let (statistics, running) = state.withLock { state in
            state.coalescer.wrote(at: now)
            return (state.statistics, state.running)
        }
        let line = Self.line(statistics, listening: listening)
        if running, line != state.withLock({ $0.lastLine }) {
            health.notify("STATUS=" + line)
        }
        do {
            try directory.writeStatus(document(statistics, line: line, running: running))
            let recovered = state.withLock { state in
                defer { state.failing = false; state.lastLine = line }
                return state.failing
            }
            if recovered { log.write(LogEntry(.notice, "the receiver's status file \(directory.statusPath) is written again")) }
        } catch {
            let first = state.withLock { state in
                defer { state.failing = true }
                return !state.failing
            }
            if first {
                log.write(LogEntry(.warning, "cannot write the receiver's status file: \(error); `txrecon status` "
                                   + "shows older counts until it can (retried with the next request)"))
            }
        }
    }

    private func document(_ statistics: ReceiveStatistics, line: String, running: Bool) -> JSONValue {
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
