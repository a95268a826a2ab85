// SweepReport: what one run of `txrecon sweep` did, in the three forms it
// leaves behind: the run's one journal entry (MESSAGE_ID sweepFinished), the
// `last-run` file `txrecon status` reads, and the exit status.
//
// Counts: pages read, notifications found (every history entry of every
// page, both passes), spooled (newly dropped into new/; in a dry run, the
// ones that would be). The checkpoint is the full pass's `completedThrough`
// at the end, its lag how far that is behind the end of the run. When the
// full pass had to start later than the checkpoint asked because Apple no
// longer keeps that history, the skipped range is in the entry and the
// entry is a warning. A checkpoint set aside because it was dated later
// than the run's start is in the entry's fields (SweepRun warns of it by
// its path). Never holds a token, a key or a signed payload.

/// The outcome of one run.
package struct SweepReport: Sendable, Equatable {
    /// nil when the run stopped before the configuration was read.
    var environment: AppStoreEnvironment?
    var dryRun: Bool
    /// Wall clock, UNIX milliseconds.
    var startedAt: Int64
    var finishedAt: Int64
    var pages = 0
    var found = 0
    var spooled = 0
    /// Requested history older than Apple keeps, UNIX milliseconds.
    var clamped: Range<Int64>?
    /// The saved checkpoint's date, later than the run's start, that was set
    /// aside (SweepPlan), UNIX milliseconds.
    var checkpointAhead: Int64?
    /// What the run made of the saved checkpoint's Environment= and
    /// BundleID= (SweepCheckpoint.match); nil before it was read.
    var checkpointMatch: SweepCheckpoint.Match?

    /// The checkpoint at the end, UNIX milliseconds.
    var checkpoint: Int64?
    /// Why the run ended early; nil when it completed.
    package var stop: SweepStop?

    package init(environment: AppStoreEnvironment?, dryRun: Bool, startedAt: Int64) {
        self.environment = environment
        self.dryRun = dryRun
        self.startedAt = startedAt
        finishedAt = startedAt
    }

    /// 0, or the stop's status (78, 75, 1).
    var exitStatus: Int32 { stop?.exitStatus ?? 0 }

    /// `completed`, `configuration`, `temporary` or `failed`.
    var result: String { stop?.kind.rawValue ?? "completed" }

    /// Seconds from the checkpoint to the end of the run.
    var checkpointLagSeconds: Int64? { checkpoint.map { max(0, finishedAt - $0) / 1000 } }

    /// The run's one journal entry.
    var logEntry: LogEntry {
        var text = dryRun ? "sweep dry run" : "sweep"
        if let environment { text += " (\(environment.rawValue))" }
        let spooledWords = dryRun ? "would be spooled" : "newly spooled"
        let counts = "\(pages) pages, \(found) notifications found, \(spooled) \(spooledWords)"
        if let stop {
            text += " stopped: \(stop.reason)"
            if pages > 0 { text += "; \(counts)" }
        } else {
            text += " completed: \(counts)"
        }
        if let checkpoint, let lag = checkpointLagSeconds {
            text += "; checkpoint \(Timestamp.rfc3339(milliseconds: checkpoint)) (\(TimeSpan.format(.seconds(lag))) behind)"
        }
        if let clamped {
            let limit = environment.map { "\($0.historyLimit.components.seconds / 86_400)-day" } ?? "history"
            text += "; notifications from \(Timestamp.rfc3339(milliseconds: clamped.lowerBound)) to "
                + "\(Timestamp.rfc3339(milliseconds: clamped.upperBound)) are beyond Apple's \(limit) limit "
                + "and were not swept"
        }

        var fields: [(name: String, value: String)] = [
            ("TXRECON_SWEEP_RESULT", result),
            ("TXRECON_SWEEP_PAGES", String(pages)),
            ("TXRECON_SWEEP_FOUND", String(found)),
            ("TXRECON_SWEEP_SPOOLED", String(spooled)),
        ]
        if let environment { fields.append(("TXRECON_SWEEP_ENVIRONMENT", environment.rawValue)) }
        if dryRun { fields.append(("TXRECON_SWEEP_DRY_RUN", "1")) }
        if let checkpoint, let lag = checkpointLagSeconds {
            fields.append(("TXRECON_SWEEP_CHECKPOINT", Timestamp.rfc3339(milliseconds: checkpoint)))
            fields.append(("TXRECON_SWEEP_CHECKPOINT_LAG_SEC", String(lag)))
        }
        if let checkpointAhead {
            fields.append(("TXRECON_SWEEP_CHECKPOINT_AHEAD", Timestamp.rfc3339(milliseconds: checkpointAhead)))
        }
        if let clamped {
            fields.append(("TXRECON_SWEEP_CLAMPED", Timestamp.rfc3339(milliseconds: clamped.lowerBound) + ".."
                + Timestamp.rfc3339(milliseconds: clamped.upperBound)))
        }
        if let stop { fields.append(("TXRECON_REASON", stop.reason)) }
        return LogEntry(priority, text, messageID: MessageID.sweepFinished, fields: fields)
    }

    private var priority: LogPriority {
        switch stop?.kind {
        case .configuration?, .failed?: .error
        case .temporary?: .warning
        case nil: clamped != nil ? .warning : spooled > 0 ? .notice : .info
        }
    }

    /// The `last-run` file's content.
    var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("finishedAt", .string(Timestamp.rfc3339(milliseconds: finishedAt))),
            ("finishedAtMs", .integer(finishedAt)),
            ("result", .string(result)),
            ("pages", .integer(pages)),
            ("found", .integer(found)),
            ("spooled", .integer(spooled)),
        ]
        if let environment { members.append(("environment", .string(environment.rawValue))) }
        if let checkpoint { members.append(("checkpointMs", .integer(checkpoint))) }
        if let lag = checkpointLagSeconds { members.append(("checkpointLagSeconds", .integer(lag))) }
        if let clamped {
            members.append(("clampedFromMs", .integer(clamped.lowerBound)))
            members.append(("clampedToMs", .integer(clamped.upperBound)))
        }
        if let checkpointAhead { members.append(("checkpointAheadMs", .integer(checkpointAhead))) }
        if let stop { members.append(("reason", .string(stop.reason))) }
        return .object(members)
    }
}
