// StatusPublisher: turns the engine's status into the STATUS= line (sd_notify)
// and the status file `txrecon status` reads. Under load the status changes
// with every item, so updates are coalesced to at most one per second; the
// last change is always published. While nothing changes nothing runs: the
// coalescing timer exists only between a change and its publication.
// Reports: nothing; a failed status-file write is retried with the next change.
import Dispatch
import Glibc
import Synchronization

final class StatusPublisher: Sendable {
    private struct State {
        var latest: DaemonStatus?
        var lastLine = ""
        var coalescer = UpdateCoalescer(interval: StatusPublisher.interval)
    }

    static let interval: Duration = .seconds(1)

    private let health: any HealthNotifier
    private let statusFile: String
    private let startedAt: Int64
    private let queue = DispatchQueue(label: "txrecon.status")
    private let state = Mutex(State())

    init(health: any HealthNotifier, statusFile: String, startedAt: Int64) {
        self.health = health
        self.statusFile = statusFile
        self.startedAt = startedAt
    }

    /// Records the newest status; publishes now or within `interval`.
    func publish(_ status: DaemonStatus) {
        let now = SystemClock().now
        let delay = state.withLock { state -> Duration? in
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

    /// Publishes the latest status at once (before READY=1 and when stopping).
    func flushNow() {
        queue.sync { self.flush() }
    }

    private func flush() {
        let now = SystemClock().now
        let (status, changed) = state.withLock { state -> (DaemonStatus?, Bool) in
            state.coalescer.wrote(at: now)
            guard let latest = state.latest else { return (nil, false) }
            let line = latest.line
            defer { state.lastLine = line }
            return (latest, line != state.lastLine)
        }
        guard let status, changed else { return }
        health.notify("STATUS=" + status.line)
        writeStatusFile(status)
    }

    private func writeStatusFile(_ daemon: DaemonStatus) {
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
        try? SystemCall.replaceFile(statusFile, JSONValue.object(members).serialized,
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
