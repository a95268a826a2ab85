// LastReconcile: the last run of `txrecon reconcile` as `txrecon status`
// shows it, read from `<spool>/reconcile/last-run` (written by
// `ReconcileRun`, format `ReconcileReport.json`). Read without the lock: the
// file is replaced by rename. Missing or unreadable reads as nil. Reports
// nothing.

package struct LastReconcile: Sendable, Equatable {
    /// When it ended, ms since 1970.
    package var finishedAt: Int64
    /// `completed`, `refused`, `configuration`, `temporary` or `failed`.
    package var result: String
    package var reason: String?
    /// The file as read, for the counts and `txrecon status --json`.
    package var json: JSONValue

    /// "3 of 3 customers due checked (0 unknown to Apple, 0 answers refused, 0 failed), 4 subscriptions: 4 in agreement, 0 changed"
    package var counts: String {
        func count(_ name: String) -> Int64 { json[name]?.int64Value ?? 0 }
        return "\(count("customers")) of \(count("due")) customers due checked (\(count("unknown")) unknown to "
            + "Apple, \(count("refused")) answers refused, \(count("failed")) failed), \(count("subscriptions")) subscriptions: "
            + "\(count("agreed")) in agreement, \(count("changed")) changed"
    }

    package static func read(_ layout: SpoolLayout) -> LastReconcile? {
        let path = ReconcileStateDirectory.path(of: layout) + "/last-run"
        guard let bytes = try? SystemCall.readFile(path, limit: 1 << 20),
              let json = try? JSONValue.parse(bytes),
              let finishedAt = json["finishedAtMs"]?.int64Value,
              let result = json["result"]?.stringValue
        else { return nil }
        return LastReconcile(finishedAt: finishedAt, result: result, reason: json["reason"]?.stringValue, json: json)
    }
}
