// StatusPublisher: turns the engine's status into the STATUS= line (sd_notify)
// and the status file `txrecon status` reads. Under load the status changes
// with every item, so updates are coalesced to at most one per second; the
// last change is always published (CoalescedWriter). While nothing changes
// nothing runs: the coalescing timer exists only between a change and its
// publication.
// Reports: a warning when the status file cannot be written (once, until a
// write succeeds again, then a notice); the write is retried with the next
// change.
import Glibc

final class StatusPublisher: Sendable {
    static let interval: Duration = .seconds(1)

    private let writer: CoalescedWriter<DaemonStatus>

    init(health: any HealthNotifier, statusFile: String, startedAt: Int64, log: any LogSink) {
        writer = CoalescedWriter(
            label: "txrecon.status", interval: Self.interval, log: log,
            failed: { error in
                LogEntry(.warning, "cannot write the status file \(statusFile): \(error); `txrecon status` shows "
                         + "older figures until it can (retried with the next change)")
            },
            recovered: LogEntry(.notice, "the status file \(statusFile) is written again")
        ) { status, _, written in
            // `written`: the STATUS= line, then the whole status the file was
            // written from. The file carries more than the line (delivered
            // and superseded counts, the ledger's rows, pending and lag), so
            // a change the line does not show is written all the same; the
            // line is sent only when it changed.
            let line = status.line
            let published = line + "\n" + String(describing: status)
            guard published != written else { return }
            if !written.hasPrefix(line + "\n") { health.notify("STATUS=" + line) }
            try Self.writeStatusFile(status, to: statusFile, startedAt: startedAt)
            written = published
        }
    }

    /// Records the newest status; publishes now or within `interval`.
    func publish(_ status: DaemonStatus) {
        writer.publish(status)
    }

    /// Publishes the latest status at once (before READY=1 and when stopping).
    func flushNow() {
        writer.flushNow()
    }

    private static func writeStatusFile(_ daemon: DaemonStatus, to statusFile: String,
                                        startedAt: Int64) throws(SpoolError) {
        let status = daemon.totals
        var members: [(String, JSONValue)] = [
            ("pid", .integer(getpid())), ("startedAt", .string(Timestamp.rfc3339(milliseconds: startedAt))),
            ("updatedAt", .string(Timestamp.rfc3339(milliseconds: Timestamp.nowMilliseconds()))),
            ("status", .string(daemon.line)), ("phase", .string(status.phase)),
            ("queued", .integer(status.queued)), ("delivering", .integer(status.delivering)),
            ("held", .integer(status.held)), ("rejected", .integer(status.rejected)),
            ("delivered", .integer(status.delivered)), ("superseded", .integer(status.superseded)),
        ]
        members += Self.condition(of: status)
        if let paused = status.intakePausedBecause { members.append(("intakePaused", .string(paused))) }
        if let below = status.intakeWaitsBelow { members.append(("intakeWaitsBelow", .integer(below))) }
        members.append(("destinations", .array(daemon.destinations.map { entry in
            .object([("name", .string(entry.name)), ("queued", .integer(entry.status.queued)),
                     ("delivering", .integer(entry.status.delivering)), ("held", .integer(entry.status.held)),
                     ("delivered", .integer(entry.status.delivered)),
                     ("superseded", .integer(entry.status.superseded))] + Self.condition(of: entry.status)
                    + (entry.status.intakeWaitsBelow.map { [("takesMoreBelow", JSONValue.integer($0))] } ?? []))
        })))
        if let ledger = daemon.ledger { members.append(("ledger", Self.ledger(ledger))) }
        try SystemCall.replaceFile(statusFile, JSONValue.object(members).serialized,
                                   temporaryName: statusFile + ".tmp", sync: false)
    }

    /// The ledger for `txrecon status`: path, rows, bytes, lag, and why it
    /// is not in use when it is not.
    private static func ledger(_ ledger: LedgerService.Status) -> JSONValue {
        var members: [(String, JSONValue)] = [("path", .string(ledger.path))]
        if let rows = ledger.rows { members.append(("rows", .integer(rows))) }
        if let bytes = ledger.bytes { members.append(("bytes", .integer(bytes))) }
        members.append(("lagMilliseconds", .integer(ledger.lagMilliseconds)))
        members.append(("pending", .integer(ledger.pending)))
        if ledger.catchingUp { members.append(("catchingUp", .bool(true))) }
        if let unavailable = ledger.unavailable { members.append(("unavailable", .string(unavailable))) }
        return .object(members)
    }

    /// `backend` (`unknown`, `ok`, `failing`) and, while failing, since
    /// when, why and when the next probe goes out.
    private static func condition(of status: EngineStatus) -> [(String, JSONValue)] {
        var members: [(String, JSONValue)] = []
        switch status.backend {
        case .unknown: members.append(("backend", .string("unknown")))
        case .ok: members.append(("backend", .string("ok")))
        case let .failing(since, lastError):
            members.append(("backend", .string("failing")))
            members.append(("failingSince", .string(Timestamp.rfc3339(milliseconds: since))))
            members.append(("lastError", .string(lastError)))
        }
        if let next = status.nextRetryAt { members.append(("nextRetryAt", .string(Timestamp.rfc3339(milliseconds: next)))) }
        return members
    }
}
