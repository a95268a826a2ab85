// ImportReport: what one run of `txrecon import` did: its journal entry
// (MESSAGE_ID importFinished) and its exit status. Counts: customers (ids)
// in the input, imported (their whole history read) this run, unknown to
// Apple, refused (an answer that did not verify), failed (a request Apple
// refused); each refusal and failure is also logged as it happens. Then
// transactions read, already
// confirmed by the destinations, spooled (in a dry run, lacking). Never
// holds a token, a key or a signed payload.

struct ImportReport: Sendable, Equatable {
    var dryRun: Bool
    /// Ids in the input.
    var customers: Int
    var startedAt: Int64
    var finishedAt: Int64
    /// Where in the input a run that went on from a checkpoint started
    /// (`customers.txt:12`).
    var resumedAt: String?
    var imported = 0
    var unknown = 0
    var refused = 0
    var failed = 0
    var transactions = 0
    var confirmed = 0
    var spooled = 0
    var stop: SweepStop?

    init(dryRun: Bool, customers: Int, startedAt: Int64) {
        self.dryRun = dryRun
        self.customers = customers
        self.startedAt = startedAt
        finishedAt = startedAt
    }

    var exitStatus: Int32 { stop?.exitStatus ?? (refused > 0 || failed > 0 ? 1 : 0) }
    var result: String {
        stop?.kind.rawValue ?? (refused > 0 ? "refused" : failed > 0 ? "incomplete" : "completed")
    }

    var logEntry: LogEntry {
        var text = dryRun ? "import dry run" : "import"
        if let resumedAt { text += " (going on at \(resumedAt))" }
        let counts = "\(imported) of \(customers) customers imported (\(unknown) unknown to Apple, \(refused) answers "
            + "refused, \(failed) failed), \(transactions) transactions: \(confirmed) confirmed already, \(spooled) "
            + (dryRun ? "lacking (would be spooled)" : "spooled")
        text += stop.map { " stopped: \($0.reason); " } ?? " completed: "
        text += counts
        if refused + failed > 0 { text += "; each refusal and failure is logged above" }
        var fields: [(name: String, value: String)] = [
            ("TXRECON_IMPORT_RESULT", result),
            ("TXRECON_IMPORT_CUSTOMERS", String(customers)),
            ("TXRECON_IMPORT_IMPORTED", String(imported)),
            ("TXRECON_IMPORT_UNKNOWN", String(unknown)),
            ("TXRECON_IMPORT_REFUSED", String(refused)),
            ("TXRECON_IMPORT_FAILED", String(failed)),
            ("TXRECON_IMPORT_TRANSACTIONS", String(transactions)),
            ("TXRECON_IMPORT_CONFIRMED", String(confirmed)),
            ("TXRECON_IMPORT_SPOOLED", String(spooled)),
        ]
        if dryRun { fields.append(("TXRECON_IMPORT_DRY_RUN", "1")) }
        if let reason = stop?.reason { fields.append(("TXRECON_REASON", reason)) }
        let priority: LogPriority = switch stop?.kind {
        case .configuration?, .failed?: .error
        case .temporary?: .warning
        case nil: refused > 0 || failed > 0 ? .error : .notice
        }
        return LogEntry(priority, text, messageID: MessageID.importFinished, fields: fields)
    }
}
