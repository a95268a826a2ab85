// ReceiverStatus: `txrecon receive` as `txrecon status` shows it, read from
// `<spool>/receive/status` (written by ReceiveReporter) and its lock.
//
// Reads without taking the lock: the file is replaced by rename, so it is
// always whole. No file means no receiver ever ran on this spool; an
// unreadable or foreign one reads as nil too. Reports nothing.

package struct ReceiverStatus: Sendable, Equatable {
    /// Whether a receiver holds the spool's receive lock now.
    package var running: Bool
    /// The file as read, for `txrecon status --json`.
    package var json: JSONValue
    /// Its status line: "receiving on …: N requests, N spooled, N refused".
    package var line: String
    /// When it was written, UNIX milliseconds.
    package var writtenAt: Int64

    /// The receiver of the spool at `layout`, or nil when none ever ran.
    package static func read(_ layout: SpoolLayout) -> ReceiverStatus? {
        let path = ReceiverStateDirectory.path(of: layout) + "/status"
        guard let info = try? SystemCall.linkStatus(path),
              let bytes = try? SystemCall.readFile(path, limit: 1 << 20),
              let json = try? JSONValue.parse(bytes),
              let line = json["status"]?.stringValue
        else { return nil }
        let writtenAt = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
        return ReceiverStatus(running: ReceiverStateDirectory.isHeld(layout), json: json, line: line,
                              writtenAt: writtenAt)
    }
}
