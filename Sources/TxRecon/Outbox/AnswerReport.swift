// AnswerReport: what one run of `txrecon answer` did: entries sent, set
// aside (each also logged on its own), left waiting, why the run stopped
// if it did, and why any app's entries were left waiting while the
// others' went; its one log entry, its exit status (the most severe of
// those stops', as AppRuns combines the runs of several apps) and its
// metrics file `txrecon-answer.prom` (when [Metrics] TextfileDirectory= is
// set). Pure.

package struct AnswerReport: Sendable {
    var sent = 0
    var setAside = 0
    /// Entries in outbox/new/ and queue/ when the run ended: those a stop
    /// left, and those written while it ran (txrecon-answer.path starts
    /// the next run for them).
    var waiting = 0
    /// Entries left in queue/ because no app of the configuration is
    /// theirs, or their app was stopped (`appStops`) (each also logged);
    /// sent once their app's file or key is right, or Apple lets it again.
    var waitingForApp = 0
    /// Purchases several destinations take, given up because one of them
    /// did not confirm within 30 days of the first: set aside, each also
    /// logged.
    var givenUp = 0
    /// What the outbox holds at the end, for the metrics.
    var counts = Outbox.Counts()
    /// What ended the run for every app: the configuration, the outbox,
    /// Apple or the network failing beyond the budgets.
    var stop: SweepStop?
    /// Why an app's entries were left waiting while the other apps' went
    /// on: no app of the configuration is theirs, its key cannot be used,
    /// Apple refused its token or does not know it, or keeps rate-limiting
    /// it. One per app stopped, naming it.
    var appStops: [SweepStop] = []
    /// Entries Apple's service or the network failed beyond the budgets
    /// (5xx, no answer) while the run went on with the next entry: each
    /// waits in queue/ for the next run. One per entry, naming it.
    var entryFailures: [SweepStop] = []
    var finishedAt: Int64 = 0

    /// `stop`, then `appStops`, then `entryFailures`.
    var stops: [SweepStop] { (stop.map { [$0] } ?? []) + appStops + entryFailures }

    /// 0 when every entry the run took was sent or set aside; else the most
    /// severe of the stops' (78, then 1, then 75; what they left waits in
    /// queue/).
    var exitStatus: Int32 { AppRuns.mostSevere(stops.map(\.exitStatus)) }

    /// The stop the exit status is of.
    private var mostSevere: SweepStop? { stops.first { $0.exitStatus == exitStatus } }

    var logEntry: LogEntry {
        var message = "answer: \(sent) sent, \(setAside) set aside, \(waiting) waiting"
        if waitingForApp > 0 { message += " (\(waitingForApp) for an app not configured or stopped)" }
        if givenUp > 0 { message += ", \(givenUp) given up (not confirmed by every destination within 30 days)" }
        let reasons = stops.map(\.reason).joined(separator: "; ")
        if !stops.isEmpty { message += "; stopped: \(reasons)" }
        let priority: LogPriority = switch mostSevere?.kind {
        case nil: waitingForApp > 0 || givenUp > 0 ? .warning : .info
        case .temporary?: .warning
        case .configuration?, .failed?: .error
        }
        return LogEntry(priority, message, messageID: MessageID.answerFinished, fields: [
            ("TXRECON_SENT", String(sent)), ("TXRECON_SET_ASIDE", String(setAside)),
            ("TXRECON_WAITING", String(waiting)), ("TXRECON_GIVEN_UP", String(givenUp)),
        ] + (mostSevere.map { [("TXRECON_REASON", reasons), ("TXRECON_STOP", $0.kind.rawValue)] } ?? []))
    }

    /// `txrecon-answer.prom`: the outbox as the last run left it.
    var metrics: String {
        var text = PrometheusText()
        text.lastRun(of: "answer", finishedAt: finishedAt, succeeded: exitStatus == 0,
                     success: "sent or set aside every entry it took")
        text.family("txrecon_outbox_entries", .gauge,
                    help: "Answers for Apple in the outbox when the last txrecon answer run ended: waiting (new/ "
                        + "and queue/), sent (kept 30 days in sent/), set aside (aside/).")
        text.sample("txrecon_outbox_entries", labels: ["state": "waiting"], PrometheusText.integer(counts.waiting))
        text.sample("txrecon_outbox_entries", labels: ["state": "sent"], PrometheusText.integer(counts.sent))
        text.sample("txrecon_outbox_entries", labels: ["state": "set-aside"], PrometheusText.integer(counts.setAside))
        return text.text
    }
}
