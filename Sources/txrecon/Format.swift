// Format: how the CLI prints rows, reports and ages for people. The text is
// built as it is; printLine escapes what it holds on the way out.
import Glibc
import TxRecon

enum Format {
    static func age(milliseconds: Int64) -> String { OperatorTime.age(milliseconds: milliseconds) }

    /// "2026-…Z (5min ago) completed: 3 pages, 41 found, 2 spooled; checkpoint 12min behind"
    static func sweep(_ sweep: LastSweep, now: Int64) -> String {
        var text = "\(WallTime.rfc3339(sweep.finishedAt)) (\(age(milliseconds: now - sweep.finishedAt)) ago) \(sweep.result)"
        if let reason = sweep.reason { text += " (\(reason))" }
        text += ": \(sweep.pages) pages, \(sweep.found) found, \(sweep.spooled) spooled"
        if let checkpoint = sweep.checkpoint { text += "; checkpoint \(age(milliseconds: now - checkpoint)) behind" }
        return text
    }

    /// "2026-…Z (1h ago) completed: 3 of 3 customers due checked (…), 4 subscriptions: 4 in agreement, 0 changed"
    static func reconcile(_ reconcile: LastReconcile, now: Int64) -> String {
        var text = "\(WallTime.rfc3339(reconcile.finishedAt)) (\(age(milliseconds: now - reconcile.finishedAt)) ago) "
            + reconcile.result
        if let reason = reconcile.reason { text += " (\(reason))" }
        return text + ": " + reconcile.counts
    }

    /// "running (pid 901), receiving on …: 12 requests, 11 spooled, 1 refused", or
    /// "not running; its last status, written 2026-…Z (3h ago): receiving on …".
    static func receiver(_ receiver: ReceiverStatus, now: Int64) -> String {
        guard receiver.running else {
            return "not running; its last status, written \(WallTime.rfc3339(receiver.writtenAt)) "
                + "(\(age(milliseconds: now - receiver.writtenAt)) ago): \(receiver.line)"
        }
        return "running (pid \(receiver.json["pid"]?.int64Value ?? 0)), \(receiver.line)"
    }

    /// `status --json`'s `receiver`: the status file, with `running` as the
    /// lock says (a receiver killed by a signal could not write false).
    static func receiverJSON(_ receiver: ReceiverStatus) -> JSONValue {
        guard case let .object(members) = receiver.json else { return receiver.json }
        return .object(members.map { $0.0 == "running" ? ("running", .bool(receiver.running)) : $0 })
    }

    /// The daemon as `txrecon status` shows it: "running (pid 812), 12 queued, …",
    /// or "not running; its last status, written 2026-…Z (3h ago): 12 queued, …".
    static func daemon(_ state: SpoolInspector.DaemonState, now: Int64) -> String {
        switch state {
        case let .running(document?):
            return "running (pid \(document["pid"]?.int64Value ?? 0)), \(document["status"]?.stringValue ?? "")"
        case .running(nil):
            return "running, no status written yet"
        case let .notRunning(last?):
            return "not running; its last status, written \(WallTime.rfc3339(last.writtenAt)) "
                + "(\(age(milliseconds: now - last.writtenAt)) ago): \(last.document["status"]?.stringValue ?? "")"
        case .notRunning(nil):
            return "not running"
        }
    }

    /// `status --json`'s members for the daemon: `daemonRunning`; `daemon`,
    /// the running daemon's status (null when none runs, or before it wrote
    /// one); `lastDaemonStatus`, when none runs, the status the last one
    /// wrote, its members as in `daemon` plus `writtenAt` (null otherwise).
    static func daemonJSON(_ state: SpoolInspector.DaemonState) -> [(String, JSONValue)] {
        switch state {
        case let .running(document):
            return [("daemonRunning", .bool(true)), ("daemon", document ?? .null), ("lastDaemonStatus", .null)]
        case let .notRunning(last):
            let written = last.map { last in
                JSONValue.object((last.document.objectValue ?? []) + [("writtenAt", .string(WallTime.rfc3339(last.writtenAt)))])
            }
            return [("daemonRunning", .bool(false)), ("daemon", .null), ("lastDaemonStatus", written ?? .null)]
        }
    }

    static func line(_ row: SpoolInspector.Row) -> String {
        var text = "\(row.name)  \(WallTime.rfc3339(row.modifiedAt))"
        if let attempts = row.attempts { text += "  attempts \(attempts)" }
        if let next = row.nextAttemptAt { text += "  next \(WallTime.rfc3339(next))" }
        if let note = row.note { text += "  \(note)" }
        return text
    }

    static func json(_ row: SpoolInspector.Row) -> JSONValue {
        var members: [(String, JSONValue)] = [("name", .string(row.name)), ("modifiedAt", .string(WallTime.rfc3339(row.modifiedAt)))]
        if let attempts = row.attempts { members.append(("attempts", .integer(attempts))) }
        if let next = row.nextAttemptAt { members.append(("nextAttemptAt", .string(WallTime.rfc3339(next)))) }
        if let note = row.note { members.append(("note", .string(note))) }
        return .object(members)
    }

    /// `txrecon show`'s lines, each printed as one line (escaped by printLine).
    /// `apps` names the item's app.
    static func report(_ report: SpoolInspector.Report, apps: AppDirectory) -> [String] {
        var lines = ["key:        \(report.key)", "location:   \(report.location.rawValue)/ (\(report.path))"]
        if let item = report.item {
            lines.append("kind:       \(item.kind.rawValue)")
            if let app = apps.name(of: item) { lines.append("app:        \(app)") }
            lines.append("version:    \(item.version)")
            let fields = item.fields
            let pairs: [(String, String?)] = [
                ("transactionId", fields.transactionId), ("originalTransactionId", fields.originalTransactionId),
                ("productId", fields.productId), ("bundleId", fields.bundleId), ("environment", fields.environment),
                ("signedDate", fields.signedDate.map { WallTime.rfc3339($0) }),
                ("revocationDate", fields.revocationDate.map { WallTime.rfc3339($0) }),
                ("notificationType", fields.notificationType), ("subtype", fields.subtype),
                ("notificationUUID", fields.notificationUUID),
            ]
            for (name, value) in pairs { if let value { lines.append("\((name + ":").padding(toLength: 11))\(value)") } }
            lines.append("signed:     \(item.signedStrings.map(\.name).joined(separator: ", "))")
        } else {
            lines.append("content:    cannot be decoded")
        }
        if let state = report.state {
            if report.location == .done {
                lines.append("attempts:   \(state.attempts) failed before it was delivered")
            } else {
                lines.append("attempts:   \(state.attempts) failed")
                if let next = state.nextAttemptAt { lines.append("next:       \(WallTime.rfc3339(next))") }
            }
            if let error = state.lastError { lines.append("last error: \(error)") }
        }
        if let reason = report.reason {
            // The daemon writes the key into the reason as the producer gave
            // it: a line break in the key must not start a line here.
            let key = report.key.rawValue
            lines.append("hold reason:")
            lines.append(contentsOf: reason.replacing(key, with: TerminalText.line(key)).split(separator: "\n").map { "  " + $0 })
        }
        return lines
    }

    /// What to say when `path`, the spool's root or one of its directories,
    /// does not exist (SpoolInspector.missingDirectory).
    static func missing(_ path: String, in layout: SpoolLayout, configurationPath: String) -> String {
        let remedy = "(systemctl start txrecon), or run systemd-tmpfiles --create"
        guard path != layout.root else {
            return "the spool \(path) does not exist; is Directory= right in \(configurationPath)? "
                + "the daemon creates it at start \(remedy)"
        }
        return "the spool \(layout.root) has no \(path.dropFirst(layout.root.count + 1))/; "
            + "the daemon creates its directories at start \(remedy)"
    }

    /// After a destination's name in `status` and `show`: nothing for one
    /// configured; for one whose file was removed, that its items wait.
    static func leftoverNote(_ place: DestinationDirectories.Place) -> String {
        place.configured ? "" : " (not configured: its items wait until destinations/\(place.name).conf is back)"
    }

    /// What a request for `--all` (or a replay's window) says when the
    /// daemon found nothing to act on: "nothing replayed: no delivered item
    /// in done/ received before 2000-01-01T00:00:00.000Z".
    static func nothingSelected(_ request: ControlRequest) -> String {
        let at = request.destination.map { " at \($0)" } ?? ""
        switch request.command {
        case .release:
            return "nothing released: no item is held\(at)"
        case .retry:
            return "nothing made due: no item is queued\(at)"
        case .requeueRejected:
            return "nothing requeued: rejected/ holds no file"
        case .replay:
            var window = ""
            if let since = request.since { window += " received at or after \(WallTime.rfc3339(since))" }
            if let until = request.until {
                window += (request.since == nil ? " received" : " and") + " before \(WallTime.rfc3339(until))"
            }
            return "nothing replayed: no delivered item in done/\(at)\(window)"
        }
    }

    static func verb(_ command: ControlRequest.Command) -> String {
        switch command {
        case .release: return "released"
        case .retry: return "due now"
        case .requeueRejected: return "requeued"
        case .replay: return "replayed, due now"
        }
    }

    // MARK: The ledger

    /// "2026-12-06T03:00:00.123Z backend 2000000123456789 1760000000000r appstore.notification REFUND
    /// com.example.monthly expires 2026-…Z attempt 2 HTTP 200 key 2000000123456789:1760000000000r"
    static func ledgerRow(_ record: LedgerRecord) -> String {
        var parts = [WallTime.rfc3339(record.confirmedAt), record.destination, record.key.rawValue,
                     record.version.description, record.kind.rawValue]
        let identity = record.identity
        if let type = identity.notificationType { parts.append(type + (identity.subtype.map { "/" + $0 } ?? "")) }
        if let product = identity.productId { parts.append(product) }
        if let expires = identity.expiresDate { parts.append("expires " + WallTime.rfc3339(expires)) }
        parts.append(record.attempt > 0 ? "attempt \(record.attempt)" : "attempt unknown")
        parts.append(record.confirmation)
        parts.append("key " + record.idempotencyKey)
        return parts.joined(separator: " ")
    }

    /// One confirmation as `history --json` and `show --json` print it.
    static func ledgerJSON(_ record: LedgerRecord) -> JSONValue {
        let identity = record.identity
        var members: [(String, JSONValue)] = [
            ("destination", .string(record.destination)), ("id", .string(record.key.rawValue)),
            ("version", .integer(record.version.primary)), ("versionToken", .string(record.version.description)),
            ("kind", .string(record.kind.rawValue)), ("confirmedAt", .string(WallTime.rfc3339(record.confirmedAt))),
            ("attempt", .integer(Int64(record.attempt))), ("confirmation", .string(record.confirmation)),
            ("idempotencyKey", .string(record.idempotencyKey)),
        ]
        let optional: [(String, String?)] = [
            ("transactionId", identity.transactionId), ("originalTransactionId", identity.originalTransactionId),
            ("appTransactionId", identity.appTransactionId), ("appAccountToken", identity.appAccountToken),
            ("productId", identity.productId), ("bundleId", identity.bundleId), ("environment", identity.environment),
            ("webOrderLineItemId", identity.webOrderLineItemId), ("notificationType", identity.notificationType),
            ("subtype", identity.subtype),
        ]
        for (name, value) in optional { if let value { members.append((name, .string(value))) } }
        if let expires = identity.expiresDate { members.append(("expiresDate", .integer(expires))) }
        return .object(members)
    }

    /// "/var/lib/txrecon/ledger.sqlite3: 1,204 rows, 0.4 MiB, up to date",
    /// as the running daemon last wrote it, else the path alone.
    static func ledger(_ state: SpoolInspector.DaemonState, path: String) -> String {
        guard case let .running(document?) = state, let ledger = document["ledger"] else {
            return path + " (the daemon's figures when it runs)"
        }
        if let unavailable = ledger["unavailable"]?.stringValue { return path + ": not in use: " + unavailable }
        var parts: [String] = []
        if let rows = ledger["rows"]?.int64Value { parts.append("\(rows) rows") }
        if let bytes = ledger["bytes"]?.int64Value, bytes >= 0 {
            // One decimal, without Foundation's formatting; a size no disk
            // holds (a status file written by hand) must not trap.
            let tenths = bytes / 104_857_600 * 1_000 + (bytes % 104_857_600 * 10 + 524_288) / 1_048_576
            parts.append("\(tenths / 10).\(tenths % 10) MiB")
        }
        let lag = ledger["lagMilliseconds"]?.int64Value ?? 0
        if ledger["catchingUp"] == .bool(true) {
            parts.append("catching up from done/")
        } else {
            parts.append(lag > 0 ? "\(age(milliseconds: lag)) behind" : "up to date")
        }
        return path + ": " + parts.joined(separator: ", ")
    }

    /// What to do about a ledger that cannot be read.
    static func ledgerHint(_ error: LedgerError) -> String {
        guard error.isUnopenable else { return "" }
        return access(error.path, F_OK) == 0
            ? " (the ledger is readable by root and the txrecon user only: it holds appAccountTokens; run as one of them)"
            : " (there is none yet: the daemon makes it at its first start)"
    }

    /// `aside  consumption.Sandbox.5100.….json  consumption 5100 Sandbox deadline …  too late: …`
    static func outboxLine(_ row: Outbox.Row) -> String {
        var line = "\(row.directory)  \(row.name)"
        if let entry = row.entry {
            line += "  \(entry.kind.rawValue) \(entry.transactionId) \(entry.environment.rawValue)"
            if let deadline = entry.deadline { line += " deadline \(WallTime.rfc3339(deadline))" }
        } else {
            line += "  (not an outbox entry)"
        }
        if let reason = row.reason { line += "  \(reason)" }
        return line
    }

    static func outboxJSON(_ row: Outbox.Row) -> JSONValue {
        var members: [(String, JSONValue)] = [("directory", .string(row.directory)), ("name", .string(row.name))]
        if let entry = row.entry {
            members += [("kind", .string(entry.kind.rawValue)), ("transactionId", .string(entry.transactionId)),
                        ("environment", .string(entry.environment.rawValue))]
            if let deadline = entry.deadline { members.append(("deadline", .string(WallTime.rfc3339(deadline)))) }
        }
        if let reason = row.reason { members.append(("reason", .string(reason))) }
        return .object(members)
    }
}
