// Checkpoint: what `txrecon sweep` remembers between runs, as the JSON in
// `<spool>/sweep/checkpoint`:
//
//   {"format":1,
//    "environment":"Production","bundleId":"com.example.app",   the app it is for
//    "completedThrough":1760000000000,            full pass: everything before is in the spool
//    "pending":{"start":…,"end":…,"paginationToken":"…"},   a window half paged (a shortcut only)
//    "spooled":{"<notificationUUID>":<signedDate ms>,…}}     recently dropped by the failures pass
//
// `completedThrough` moves past a window only once every notification of
// that window is durably in new/, so a crash or kill at any instant means the
// window is fetched again, never skipped. `pending` lets the next run go on
// from the page after the last spooled one; Apple may have expired the token
// by then, and the window simply starts over. `spooled` keeps the sweep from
// dropping the same notification again on every run while it stays in the
// 8-day failures pass (the daemon would absorb the copies, but each costs a
// verification and a log line); entries older than anything a later run can
// fetch are forgotten. The full pass reads each window once and remembers
// nothing of it here: the file stays as small as the failures are few. Losing the file loses none of the spool's
// state: the next run starts 8 days back.
//
// A checkpoint is one app's in one environment: Production's history is not
// the sandbox's, nor one bundle's another's. A run whose Environment= or
// BundleID= differs from the checkpoint's takes it as none (`match`), so
// that its first run looks 8 days back as any first run does, rather than an
// hour back from where the other history left off. A checkpoint written
// before these members existed is taken as the run's own, and marked with
// it: an operator upgrading keeps the coverage, and is told (SweepRun).
//
// Pure: `SweepStateDirectory` reads and writes the file. A file that is not
// this format is `Checkpoint.Damaged`, with the member at fault.

package struct SweepCheckpoint: Sendable, Equatable {
    /// A full-pass window the last run was paging when it stopped.
    struct PendingWindow: Sendable, Equatable {
        /// UNIX milliseconds, as in the window's request.
        var start: Int64
        var end: Int64
        /// Where the next page starts.
        var paginationToken: String
    }

    /// What a run makes of a saved checkpoint (`match`).
    enum Match: Sendable, Equatable {
        /// Written for this Environment= and BundleID=.
        case same
        /// Written before checkpoints named their app: taken as this run's.
        case unmarked
        /// Written for another environment or bundle: taken as none.
        case other(environment: String?, bundleID: String?)
    }

    /// The format this code writes.
    static let format: Int64 = 1

    /// Every full-pass notification dated before this (UNIX milliseconds) is
    /// in the spool; nil before the first complete window.
    var completedThrough: Int64?
    /// The [Sweep] Environment= (`Production`, `Sandbox`) and BundleID= of
    /// the run that wrote it; both nil in a checkpoint from before 2026-12.
    var environment: String?
    var bundleID: String?
    var pending: PendingWindow?
    /// `notificationUUID` → its `signedDate` (UNIX milliseconds) for the
    /// notifications sweeps have dropped lately.
    var spooled: [String: Int64] = [:]

    init(completedThrough: Int64? = nil, environment: String? = nil, bundleID: String? = nil,
         pending: PendingWindow? = nil, spooled: [String: Int64] = [:]) {
        self.completedThrough = completedThrough
        self.environment = environment
        self.bundleID = bundleID
        self.pending = pending
        self.spooled = spooled
    }

    /// Whether this checkpoint is for a run with `settings`.
    func match(_ settings: SweepSettings) -> Match {
        if environment == nil && bundleID == nil {
            // None saved yet (or nothing in it) is nobody's.
            let empty = completedThrough == nil && pending == nil && spooled.isEmpty
            return empty ? .same : .unmarked
        }
        if environment == settings.environment.rawValue && bundleID == settings.bundleID { return .same }
        return .other(environment: environment, bundleID: bundleID)
    }

    /// Forgets what no run can fetch again: notifications dated before
    /// `cutoff` (UNIX milliseconds).
    mutating func forgetSpooled(before cutoff: Int64) {
        spooled = spooled.filter { $0.value >= cutoff }
    }

    /// The file's content; `spooled` sorted by UUID, so that one state
    /// always has one spelling.
    var serialized: [UInt8] {
        var members: [(String, JSONValue)] = [("format", .integer(Self.format))]
        if let environment { members.append(("environment", .string(environment))) }
        if let bundleID { members.append(("bundleId", .string(bundleID))) }
        members.append(("completedThrough", completedThrough.map { .integer($0) } ?? .null))
        if let pending {
            members.append(("pending", .object([
                ("start", .integer(pending.start)), ("end", .integer(pending.end)),
                ("paginationToken", .string(pending.paginationToken)),
            ])))
        } else {
            members.append(("pending", .null))
        }
        members.append(("spooled", .object(spooled.sorted { $0.key < $1.key }.map { ($0.key, .integer($0.value)) })))
        return JSONValue.object(members).serialized
    }

    /// The file is not a checkpoint this code wrote.
    struct Damaged: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// Reads a checkpoint file's content.
    init(json bytes: [UInt8]) throws(Damaged) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw Damaged(description: "it is not JSON (\(error))")
        }
        guard value["format"]?.int64Value == Self.format else {
            throw Damaged(description: "it has no \"format\":\(Self.format)")
        }
        for (name, member) in [("environment", \Self.environment), ("bundleId", \Self.bundleID)] {
            switch value[name] {
            case nil: break
            case let text? where text.stringValue != nil: self[keyPath: member] = text.stringValue
            default: throw Damaged(description: "\(name) is not a string")
            }
        }
        switch value["completedThrough"] {
        case .null?: completedThrough = nil
        case let number? where number.int64Value != nil: completedThrough = number.int64Value
        default: throw Damaged(description: "completedThrough is not a number or null")
        }
        switch value["pending"] {
        case .null?:
            pending = nil
        case let object?:
            guard let start = object["start"]?.int64Value, let end = object["end"]?.int64Value,
                  let token = object["paginationToken"]?.stringValue
            else { throw Damaged(description: "pending lacks start, end or paginationToken") }
            pending = PendingWindow(start: start, end: end, paginationToken: token)
        case nil:
            throw Damaged(description: "pending is missing")
        }
        guard let entries = value["spooled"]?.objectValue else {
            throw Damaged(description: "spooled is not an object")
        }
        for (uuid, date) in entries {
            guard let milliseconds = date.int64Value else {
                throw Damaged(description: "spooled.\(LogText.singleLine(uuid, limit: 60)) is not a number")
            }
            spooled[uuid] = milliseconds
        }
    }
}
