// ReconcileGaps: windows in which txrecon may have missed what Apple sent,
// reported by the programs that notice them and read by `txrecon
// reconcile`, which then checks every subscription that was live in the
// window (ReconcileSchedule, `gap`). One empty file per gap in
// `<spool>/reconcile/gaps/`, named `SOURCE-FROM-TO` (ms since 1970):
//
//   sweep     Apple's history holds notifications Apple could not deliver
//             (the failures pass spooled some): from the first to the last
//             one's signedDate (and a minute); and history older than Apple
//             keeps (the range the run could not sweep).
//   receive   the receiver answered a notification 503 (the spool could not
//             take it: unavailable, inbox full, rejected quota): the hour it
//             happened in, one file per hour however many refusals.
//
// Creating a file that exists already is success: a gap is reported once.
// A reported gap is durable (the file and its directory fsynced, the
// directory also when the file was there already): the sweep
// reports one before the checkpoint that passes the page it was found in.
// A gap is settled, and its file removed by the reconcile, once a run that
// started after the gap's end completed with nothing refused or failed
// (every customer live in it was checked after it ended). Reports failures
// as SpoolError.
import Glibc

package struct ReconcileGap: Sendable, Equatable {
    package var source: String
    /// ms since 1970.
    package var from: Int64
    package var to: Int64

    package init(source: String, from: Int64, to: Int64) {
        self.source = source
        self.from = from
        self.to = to
    }

    var fileName: String { "\(source)-\(from)-\(to)" }

    /// The gap a file name spells; nil for anything else.
    init?(fileName name: String) {
        let parts = name.split(separator: "-")
        guard parts.count == 3, !parts[0].isEmpty, let from = Int64(parts[1]), let to = Int64(parts[2]),
              from <= to else { return nil }
        self.init(source: String(parts[0]), from: from, to: to)
    }
}

package enum ReconcileGaps {
    /// `<spool>/reconcile/gaps`.
    static func directory(of layout: SpoolLayout) -> String {
        ReconcileStateDirectory.path(of: layout) + "/gaps"
    }

    /// Records `gap` (creating the directories as needed), durable when it
    /// returns. `syncDirectory`: SystemCall's; tests count the calls.
    package static func report(_ gap: ReconcileGap, layout: SpoolLayout,
                               syncDirectory: (String) throws(SpoolError) -> Void = SystemCall.syncDirectory)
        throws(SpoolError) {
        try layout.createStateRoot()
        try SpoolLayout.makeDirectory(ReconcileStateDirectory.path(of: layout), mode: 0o2750)
        try SpoolLayout.makeDirectory(directory(of: layout), mode: 0o2750)
        do {
            try SystemCall.writeNewFile(directory(of: layout) + "/" + gap.fileName, [], mode: 0o640, sync: true)
        } catch where error.code == EEXIST {
            // Synced all the same: the file may be one a report killed
            // between its fsync and the directory's left behind, whose
            // name a power cut would still lose; the caller's checkpoint
            // passes the page next.
        }
        try syncDirectory(directory(of: layout))
    }

    /// The hour-long gap the receiver reports for a refusal at `now`.
    package static func receiverGap(at now: Int64) -> ReconcileGap {
        let hour: Int64 = 3_600_000
        let start = now - now % hour
        return ReconcileGap(source: "receive", from: start, to: start + hour)
    }

    /// Every gap reported and not yet settled; none when there is no directory.
    static func read(layout: SpoolLayout) -> [ReconcileGap] {
        ((try? SystemCall.listDirectory(directory(of: layout))) ?? []).compactMap(ReconcileGap.init(fileName:))
            .sorted { ($0.from, $0.to, $0.source) < ($1.from, $1.to, $1.source) }
    }

    /// The gaps a run that started at `runStart` settles when it completes:
    /// those that ended before it, but for one a customer it left due
    /// (`leftDue`: each one's expiry dates; refused or failed) was live
    /// in, which stays until that customer is checked. One customer that
    /// keeps failing holds back only its own gaps.
    static func settled(_ gaps: [ReconcileGap], runStart: Int64, leftDue: [[Int64]]) -> [ReconcileGap] {
        gaps.filter { gap in
            gap.to <= runStart && !leftDue.contains { ReconcileSchedule.isLive($0, in: gap, now: runStart) }
        }
    }

    static func remove(_ gaps: [ReconcileGap], layout: SpoolLayout) {
        for gap in gaps { unlink(directory(of: layout) + "/" + gap.fileName) }
    }
}
