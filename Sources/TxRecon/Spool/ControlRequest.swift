// ControlRequest: what the CLI asks the daemon to do through ctl/, and the
// daemon's answer. The CLI writes a request into tmp/ and renames it into
// ctl/NAME; the daemon executes it (at once, or at its next start), writes
// ctl/NAME.result and removes ctl/NAME. Only the daemon moves items, so an
// operator command and a delivery never race.

/// An operator command for the daemon.
package struct ControlRequest: Sendable, Equatable {
    package enum Command: String, Sendable, CaseIterable {
        /// hold/ -> queue/, due now.
        case release
        /// Queued items due now.
        case retry
        /// rejected/ -> new/, read again (after a configuration fix).
        case requeueRejected = "requeue-rejected"
        /// done/ -> queue/, delivered again (the backend lost what it had
        /// applied); only root may ask for it.
        case replay
    }

    package var command: Command
    /// Item keys (release, retry, replay) or rejected file names (requeue-rejected).
    package var targets: [String]
    /// Every held, queued, rejected or (replay) delivered item, instead of `targets`.
    package var all: Bool
    /// Replay only: the delivered snapshots received (their producer's
    /// write time, ms since 1970) at or after `since` and before `until`.
    package var since: Int64?
    package var until: Int64?
    /// Only this destination's items (`backend` for `[Backend]`); nil: every
    /// destination's.
    package var destination: String?

    package init(_ command: Command, targets: [String] = [], all: Bool = false, since: Int64? = nil,
                until: Int64? = nil, destination: String? = nil) {
        self.command = command
        self.targets = targets
        self.all = all
        self.since = since
        self.until = until
        self.destination = destination
    }

    /// The answer to a target no command may act on.
    package static let invalidTargetReason = "not a valid name"

    /// Whether `target` can name what `command` acts on: an item key
    /// (1-128 bytes) for release and retry; for requeue-rejected, a file
    /// name in rejected/ (not empty, `.` or `..`, no `/` or NUL, not hidden,
    /// not a `.reason`). The one check of every name in a request: the CLI
    /// makes it before it writes one, the daemon again before it acts on
    /// one, since anyone in group txrecon can write ctl/.
    package static func isValid(_ target: String, for command: Command) -> Bool {
        switch command {
        case .release, .retry, .replay:
            return ItemKey(target) != nil
        case .requeueRejected:
            return !target.isEmpty && target.utf8.count <= 255 && !target.hasPrefix(".")
                && !target.utf8.contains(UInt8(ascii: "/")) && !target.utf8.contains(0)
                && !target.hasSuffix(".reason")
        }
    }

    package var json: JSONValue {
        var members: [(String, JSONValue)] = [("command", .string(command.rawValue)),
                                              ("targets", .array(targets.map(JSONValue.string))),
                                              ("all", .bool(all))]
        if let since { members.append(("since", .number(String(since)))) }
        if let until { members.append(("until", .number(String(until)))) }
        if let destination { members.append(("destination", .string(destination))) }
        return .object(members)
    }

    /// nil for anything that is not a request this version understands.
    package init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes),
              let command = value["command"]?.stringValue.flatMap(Command.init(rawValue:)),
              let targets = value["targets"]?.arrayValue,
              let all = value["all"]?.boolValue else { return nil }
        let names = targets.compactMap(\.stringValue)
        guard names.count == targets.count else { return nil }
        let since = value["since"]?.int64Value, until = value["until"]?.int64Value
        guard (value["since"] == nil || since != nil) && (value["until"] == nil || until != nil) else { return nil }
        let destination = value["destination"]?.stringValue
        guard value["destination"] == nil || destination != nil else { return nil }
        self.init(command, targets: names, all: all, since: since, until: until, destination: destination)
    }
}

/// The daemon's answer to one request.
package struct ControlResult: Sendable, Equatable {
    /// Targets the command applied to.
    package var applied: [String] = []
    /// Targets it could not apply to, each with the reason in words.
    package var skipped: [(target: String, reason: String)] = []
    /// The skipped targets this destination had nothing to do for (not
    /// held, not queued, not in its done/, pending there anyway): with
    /// several destinations, no news when another applied the command. Not
    /// part of the answer.
    var nothingToDoHere: Set<String> = []

    package init() {}

    package static func == (lhs: ControlResult, rhs: ControlResult) -> Bool {
        lhs.applied == rhs.applied && lhs.skipped.map(\.target) == rhs.skipped.map(\.target)
            && lhs.skipped.map(\.reason) == rhs.skipped.map(\.reason)
    }

    /// One result of the results of several destinations: a target is
    /// applied when some destination applied it. A destination that
    /// refused a target (a held key with another snapshot queued there, a
    /// move that failed, held there when asked to retry) is said, named,
    /// whether another applied it or none did: the operator must not read
    /// "applied" as "applied everywhere", nor the first destination's "not
    /// held" as the key's state everywhere. A target no destination had
    /// anything to do for is skipped with the first one's reason.
    init(merging results: [(destination: String, result: ControlResult)]) {
        let applied = Set(results.flatMap(\.result.applied))
        var seen = Set<String>()
        for (_, result) in results {
            for target in result.applied where seen.insert(target).inserted { self.applied.append(target) }
        }
        var notApplied: [(target: String, reason: String)] = []
        var refusals: [String: [String]] = [:]
        for (destination, result) in results {
            for entry in result.skipped {
                let refused = !result.nothingToDoHere.contains(entry.target)
                if applied.contains(entry.target) {
                    if refused { skipped.append((entry.target, "at \(destination): \(entry.reason)")) }
                    continue
                }
                if seen.insert(entry.target).inserted { notApplied.append(entry) }
                if refused {
                    let reason: String = results.count > 1 ? "at " + destination + ": " + entry.reason : entry.reason
                    refusals[entry.target, default: []].append(reason)
                }
            }
        }
        for entry in notApplied {
            for reason in refusals[entry.target] ?? [entry.reason] { skipped.append((entry.target, reason)) }
        }
    }

    package var json: JSONValue {
        .object([("applied", .array(applied.map(JSONValue.string))),
                 ("skipped", .array(skipped.map { .object([("target", .string($0.target)), ("reason", .string($0.reason))]) }))])
    }

    package init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes), let applied = value["applied"]?.arrayValue,
              let skipped = value["skipped"]?.arrayValue else { return nil }
        self.applied = applied.compactMap(\.stringValue)
        self.skipped = skipped.compactMap { entry in
            guard let target = entry["target"]?.stringValue, let reason = entry["reason"]?.stringValue else { return nil }
            return (target, reason)
        }
    }
}
