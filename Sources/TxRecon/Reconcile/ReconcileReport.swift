// ReconcileReport: what one run of `txrecon reconcile` did, in the forms it
// leaves behind: the run's one journal entry (MESSAGE_ID
// reconcileFinished), the `last-run` file `txrecon status` reads, the
// metrics file `txrecon-reconcile.prom` (when [Metrics] TextfileDirectory=
// is set; one for all the apps of a run), and the exit status.
//
// Counts: customers due and asked about; of those, unknown to Apple (404: a
// transaction id Apple does not have in this environment) and refused (an
// answer that did not verify: that customer skipped, nothing of it
// spooled); subscriptions checked (every latest transaction Apple answered
// with for the others), in agreement with what the destinations confirmed
// or changed (spooled; in a dry run, would be). Never holds a token, a key
// or a signed payload.

package struct ReconcileReport: Sendable, Equatable {
    var environment: AppStoreEnvironment?
    var dryRun: Bool
    var all: Bool
    /// An --all run that went on with an earlier one stopped at this time
    /// (ms since 1970): customers checked since were not asked again.
    var goesOnFrom: Int64?
    /// Wall clock, ms since 1970.
    var startedAt: Int64
    var finishedAt: Int64
    /// Customers due this run, by why.
    var due: [ReconcileReason: Int] = [:]
    var customers = 0
    var subscriptions = 0
    var agreed = 0
    var changed = 0
    /// Customers Apple does not know.
    var unknown = 0
    /// Customers whose answer did not verify.
    var refused = 0
    /// The first refusal, named: `customer …: invalid-signature: …`.
    var firstRefusal: String?
    /// Customers whose request Apple refused (a 4xx other than 401 and
    /// 429); left due, as the refused ones.
    var failed = 0
    var firstFailure: String?
    /// The expiry dates of each customer refused or failed, left due: the
    /// gaps they were live in stay (ReconcileGaps.settled).
    var leftDue: [[Int64]] = []
    /// Why the run ended early; nil when it completed.
    package var stop: SweepStop?

    init(environment: AppStoreEnvironment?, dryRun: Bool, all: Bool, startedAt: Int64) {
        self.environment = environment
        self.dryRun = dryRun
        self.all = all
        self.startedAt = startedAt
        finishedAt = startedAt
    }

    /// The stop's status (78, 75, 1); 1 when an answer was refused or a
    /// request failed; else 0.
    var exitStatus: Int32 { stop?.exitStatus ?? (refused > 0 || failed > 0 ? 1 : 0) }

    /// `completed`, `refused` (completed, but answers were refused),
    /// `incomplete` (completed, but Apple refused requests), `configuration`,
    /// `temporary` or `failed`.
    var result: String {
        stop?.kind.rawValue ?? (refused > 0 ? "refused" : failed > 0 ? "incomplete" : "completed")
    }

    var dueTotal: Int { due.values.reduce(0, +) }

    private var counts: String {
        let changedWords = dryRun ? "changed (would be spooled)" : "changed and spooled"
        return "\(customers) of \(dueTotal) customers due checked (\(unknown) unknown to Apple, \(refused) answers "
            + "refused, \(failed) failed), \(subscriptions) subscriptions: \(agreed) in agreement, \(changed) \(changedWords)"
    }

    /// The run's one journal entry.
    var logEntry: LogEntry {
        var text = dryRun ? "reconcile dry run" : "reconcile"
        if let environment { text += " (\(environment.rawValue))" }
        if all { text += " of every subscription" }
        if let goesOnFrom {
            text += " (going on with the --all run begun at \(Timestamp.rfc3339(milliseconds: goesOnFrom)), which "
                + "stopped: customers checked since were not asked again)"
        }
        if let stop {
            text += " stopped: \(stop.reason); \(counts)"
        } else {
            text += " completed: \(counts)"
        }
        if let firstRefusal {
            text += "; refused: \(firstRefusal)" + (refused > 1 ? " (and \(refused - 1) more)" : "")
        }
        if let firstFailure {
            text += "; failed: \(firstFailure)" + (failed > 1 ? " (and \(failed - 1) more)" : "")
        }
        var fields: [(name: String, value: String)] = [
            ("TXRECON_RECONCILE_RESULT", result),
            ("TXRECON_RECONCILE_DUE", String(dueTotal)),
            ("TXRECON_RECONCILE_CUSTOMERS", String(customers)),
            ("TXRECON_RECONCILE_SUBSCRIPTIONS", String(subscriptions)),
            ("TXRECON_RECONCILE_AGREED", String(agreed)),
            ("TXRECON_RECONCILE_CHANGED", String(changed)),
            ("TXRECON_RECONCILE_UNKNOWN", String(unknown)),
            ("TXRECON_RECONCILE_REFUSED", String(refused)),
            ("TXRECON_RECONCILE_FAILED", String(failed)),
        ]
        if let environment { fields.append(("TXRECON_RECONCILE_ENVIRONMENT", environment.rawValue)) }
        if dryRun { fields.append(("TXRECON_RECONCILE_DRY_RUN", "1")) }
        if let reason = stop?.reason ?? firstRefusal ?? firstFailure { fields.append(("TXRECON_REASON", reason)) }
        return LogEntry(priority, text, messageID: MessageID.reconcileFinished, fields: fields)
    }

    private var priority: LogPriority {
        switch stop?.kind {
        case .configuration?, .failed?: .error
        case .temporary?: .warning
        case nil: refused > 0 || failed > 0 ? .error : changed > 0 ? .notice : .info
        }
    }

    /// The `last-run` file's content.
    var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("finishedAt", .string(Timestamp.rfc3339(milliseconds: finishedAt))),
            ("finishedAtMs", .integer(finishedAt)),
            ("result", .string(result)),
            ("all", .bool(all)),
            ("due", .integer(Int64(dueTotal))),
            ("customers", .integer(Int64(customers))),
            ("subscriptions", .integer(Int64(subscriptions))),
            ("agreed", .integer(Int64(agreed))),
            ("changed", .integer(Int64(changed))),
            ("unknown", .integer(Int64(unknown))),
            ("refused", .integer(Int64(refused))),
            ("failed", .integer(Int64(failed))),
        ]
        if let environment { members.append(("environment", .string(environment.rawValue))) }
        if let goesOnFrom { members.append(("goesOnFrom", .string(Timestamp.rfc3339(milliseconds: goesOnFrom)))) }
        if let reason = stop?.reason ?? firstRefusal ?? firstFailure { members.append(("reason", .string(reason))) }
        return .object(members)
    }

    /// `txrecon-reconcile.prom`, for node_exporter's textfile collector:
    /// the last run of `txrecon reconcile` through its apps (AppRuns), one
    /// report each. One file for the run, without an app label, so that an
    /// app's result never hides another's: a success only when every app
    /// succeeded (those that stopped at start-up included), the counts
    /// summed, the time when the last one ended. The journal entries name
    /// the app that failed.
    static func metrics(of reports: [ReconcileReport]) -> String {
        func sum(_ count: (ReconcileReport) -> Int) -> String { PrometheusText.integer(reports.map(count).reduce(0, +)) }
        var text = PrometheusText()
        text.lastRun(of: "reconcile", finishedAt: reports.map(\.finishedAt).max() ?? 0,
                     succeeded: AppRuns.mostSevere(reports.map(\.exitStatus)) == 0,
                     success: "completed with nothing refused or failed, for every app")
        text.family("txrecon_reconcile_last_run_customers", .gauge,
                    help: "Customers the last txrecon reconcile run found due, checked, unknown to Apple, refused, failed.")
        text.sample("txrecon_reconcile_last_run_customers", labels: ["stage": "due"], sum(\.dueTotal))
        text.sample("txrecon_reconcile_last_run_customers", labels: ["stage": "checked"], sum(\.customers))
        text.sample("txrecon_reconcile_last_run_customers", labels: ["stage": "unknown"], sum(\.unknown))
        text.sample("txrecon_reconcile_last_run_customers", labels: ["stage": "refused"], sum(\.refused))
        text.sample("txrecon_reconcile_last_run_customers", labels: ["stage": "failed"], sum(\.failed))
        text.family("txrecon_reconcile_last_run_subscriptions", .gauge,
                    help: "Subscriptions the last txrecon reconcile run checked, by what it found.")
        text.sample("txrecon_reconcile_last_run_subscriptions", labels: ["outcome": "agreed"], sum(\.agreed))
        text.sample("txrecon_reconcile_last_run_subscriptions", labels: ["outcome": "changed"], sum(\.changed))
        return text.text
    }
}
