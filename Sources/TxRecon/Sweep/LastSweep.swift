// LastSweep: the last run of `txrecon sweep` as `txrecon status` shows it,
// read from `<spool>/sweep/last-run` (written by `SweepRun` through
// `SweepStateDirectory`, format `SweepReport.json`).
//
// Reads without the sweep's lock: the file is replaced by rename, so it is
// always whole. A missing file means no sweep ever ran on this spool; an
// unreadable or foreign one reads as nil too, since status output is not the
// place to diagnose it. Reports nothing.

/// What the last sweep did.
package struct LastSweep: Sendable, Equatable {
    /// When it ended, UNIX milliseconds.
    package var finishedAt: Int64
    /// `completed`, `configuration`, `temporary` or `failed`.
    package var result: String
    /// Why it stopped, when it did.
    package var reason: String?
    package var pages: Int64
    package var found: Int64
    package var spooled: Int64
    /// The checkpoint it left, UNIX milliseconds.
    package var checkpoint: Int64?
    /// The file as read, for `txrecon status --json`.
    package var json: JSONValue

    /// The last sweep on the spool at `layout`, or nil when there is none.
    package static func read(_ layout: SpoolLayout) -> LastSweep? {
        let path = SweepStateDirectory.path(of: layout) + "/last-run"
        guard let bytes = try? SystemCall.readFile(path, limit: 1 << 20),
              let json = try? JSONValue.parse(bytes),
              let finishedAt = json["finishedAtMs"]?.int64Value,
              let result = json["result"]?.stringValue
        else { return nil }
        return LastSweep(finishedAt: finishedAt, result: result, reason: json["reason"]?.stringValue,
                         pages: json["pages"]?.int64Value ?? 0, found: json["found"]?.int64Value ?? 0,
                         spooled: json["spooled"]?.int64Value ?? 0, checkpoint: json["checkpointMs"]?.int64Value,
                         json: json)
    }
}
