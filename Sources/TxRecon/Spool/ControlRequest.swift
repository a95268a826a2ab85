// ControlRequest: what the CLI asks the daemon to do through ctl/, and the
// daemon's answer. The CLI writes a request into tmp/ and renames it into
// ctl/NAME; the daemon executes it (at once, or at its next start), writes
// ctl/NAME.result and removes ctl/NAME. Only the daemon moves items, so an
// operator command and a delivery never race.

/// An operator command for the daemon.
public struct ControlRequest: Sendable, Equatable {
    public enum Command: String, Sendable, CaseIterable {
        /// hold/ -> queue/, due now.
        case release
        /// Queued items due now.
        case retry
        /// rejected/ -> new/, read again (after a configuration fix).
        case requeueRejected = "requeue-rejected"
    }

    public var command: Command
    /// Item keys (release, retry) or rejected file names (requeue-rejected).
    public var targets: [String]
    /// Every held, queued or rejected item, instead of `targets`.
    public var all: Bool

    public init(_ command: Command, targets: [String] = [], all: Bool = false) {
        self.command = command
        self.targets = targets
        self.all = all
    }

    public var json: JSONValue {
        .object([("command", .string(command.rawValue)),
                 ("targets", .array(targets.map(JSONValue.string))),
                 ("all", .bool(all))])
    }

    /// nil for anything that is not a request this version understands.
    public init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes),
              let command = value["command"]?.stringValue.flatMap(Command.init(rawValue:)),
              let targets = value["targets"]?.arrayValue,
              let all = value["all"]?.boolValue else { return nil }
        let names = targets.compactMap(\.stringValue)
        guard names.count == targets.count else { return nil }
        self.init(command, targets: names, all: all)
    }
}

/// The daemon's answer to one request.
public struct ControlResult: Sendable, Equatable {
    /// Targets the command applied to.
    public var applied: [String] = []
    /// Targets it could not apply to, each with the reason in words.
    public var skipped: [(target: String, reason: String)] = []

    public init() {}

    public static func == (lhs: ControlResult, rhs: ControlResult) -> Bool {
        lhs.applied == rhs.applied && lhs.skipped.map(\.target) == rhs.skipped.map(\.target)
            && lhs.skipped.map(\.reason) == rhs.skipped.map(\.reason)
    }

    public var json: JSONValue {
        .object([("applied", .array(applied.map(JSONValue.string))),
                 ("skipped", .array(skipped.map { .object([("target", .string($0.target)), ("reason", .string($0.reason))]) }))])
    }

    public init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes), let applied = value["applied"]?.arrayValue,
              let skipped = value["skipped"]?.arrayValue else { return nil }
        self.applied = applied.compactMap(\.stringValue)
        self.skipped = skipped.compactMap { entry in
            guard let target = entry["target"]?.stringValue, let reason = entry["reason"]?.stringValue else { return nil }
            return (target, reason)
        }
    }
}
