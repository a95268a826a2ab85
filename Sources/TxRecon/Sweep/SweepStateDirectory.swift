// SweepStateDirectory: `<spool>/sweep/`, where `txrecon sweep` keeps its
// state between runs:
//
//   checkpoint   the `SweepCheckpoint` (JSON), replaced after every page
//   last-run     the last run's `SweepReport` (JSON), read by `txrecon status`
//   lock         flock(2)ed for the whole run: one sweep at a time
//
// Beside the spool so that `txrecon status` finds it from the configuration
// alone and one ReadWritePaths= covers both. The directory is 0750 and the
// files 0640, so group txrecon can read them. Every replacement is written
// under a temporary name, fsynced, renamed over the old file and the
// directory fsynced: after a crash the file holds the old state or the new,
// and once `saveCheckpoint` returns the new one survives a power cut.
//
// Failures are `SweepStop`s naming the path and what to do: another sweep
// holds the lock (temporary), a damaged checkpoint or a file-system error
// (failed). Blocks on disk I/O: the sweep's thread only.
import Glibc

/// Where the sweep's checkpoint comes from and goes to. The production store
/// is `SweepStateDirectory`; tests wrap it to fail at a chosen save.
package protocol SweepStateStore {
    /// The saved checkpoint, or an empty one before the first run.
    func loadCheckpoint() throws(SweepStop) -> SweepCheckpoint
    /// Makes `checkpoint` durable before returning.
    func saveCheckpoint(_ checkpoint: SweepCheckpoint) throws(SweepStop)
    /// Tells `txrecon reconcile` of `gap` (ReconcileGaps), durably: the
    /// sweep reports it before the checkpoint that passes the page it found
    /// it in, since no later run finds it again.
    func reportGap(_ gap: ReconcileGap) throws(SweepStop)
}

/// The state directory of one spool, locked for this process while the
/// value lives.
package final class SweepStateDirectory: SweepStateStore, Sendable {
    /// Checkpoint files larger than this are refused, bytes: 64 MiB.
    static let checkpointLimit = 64 << 20

    let path: String
    private let layout: SpoolLayout
    private let lockDescriptor: Int32

    var checkpointPath: String { path + "/checkpoint" }
    var lastRunPath: String { path + "/last-run" }

    /// `<spool>/sweep`.
    static func path(of layout: SpoolLayout) -> String { layout.stateRoot + "/sweep" }

    /// Creates the directory if needed and takes its lock. `readingOnly`
    /// (a dry run, which saves nothing): neither; the checkpoint is read if
    /// there is one. A dry run made by root for a look would otherwise leave
    /// the directory and its lock root's, and every run of the unit, as
    /// user txrecon, would fail to open them.
    package init(layout: SpoolLayout, readingOnly: Bool = false) throws(SweepStop) {
        path = Self.path(of: layout)
        self.layout = layout
        guard !readingOnly else {
            lockDescriptor = -1
            return
        }
        do {
            try layout.createStateRoot()
            try SpoolLayout.makeDirectory(path, mode: 0o2750)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot create the sweep's state directory: \(error); "
                + "the spool \(layout.root) must exist and be writable by the sweep's user")
        }
        let lockPath = path + "/lock"
        do {
            lockDescriptor = try LockFile.acquire(lockPath)
        } catch where error.code == EWOULDBLOCK {
            throw SweepStop(kind: .temporary, reason: "another txrecon sweep is running on this spool "
                + "(it holds \(lockPath)); this run does nothing")
        } catch {
            throw SweepStop(kind: .failed, reason: "\(error)")
        }
    }

    deinit {
        if lockDescriptor >= 0 { LockFile.release(lockDescriptor) }
    }

    package func loadCheckpoint() throws(SweepStop) -> SweepCheckpoint {
        let bytes: [UInt8]
        do {
            bytes = try SystemCall.readFile(checkpointPath, limit: Self.checkpointLimit)
        } catch where error.code == ENOENT {
            return SweepCheckpoint()
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot read the checkpoint: \(error)")
        }
        do {
            return try SweepCheckpoint(json: bytes)
        } catch {
            throw SweepStop(kind: .failed, reason: "\(checkpointPath) is damaged: \(error); move it aside to "
                + "start over (the next run then sweeps the last 8 days)")
        }
    }

    package func saveCheckpoint(_ checkpoint: SweepCheckpoint) throws(SweepStop) {
        do {
            try replace(checkpointPath, checkpoint.serialized)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot save the checkpoint: \(error); "
                + "the next run fetches this window again")
        }
    }

    package func reportGap(_ gap: ReconcileGap) throws(SweepStop) {
        do {
            try ReconcileGaps.report(gap, layout: layout)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot tell txrecon reconcile about the gap "
                + "\(Timestamp.rfc3339(milliseconds: gap.from))..\(Timestamp.rfc3339(milliseconds: gap.to)): \(error); "
                + "the next run fetches this window again")
        }
    }

    /// Records `report` for `txrecon status`.
    func saveLastRun(_ report: SweepReport) throws(SpoolError) {
        try replace(lastRunPath, report.json.serialized)
    }

    private func replace(_ file: String, _ bytes: [UInt8]) throws(SpoolError) {
        try SystemCall.replaceFile(file, bytes, temporaryName: file + ".tmp", sync: true, mode: 0o640)
        try SystemCall.syncDirectory(path)
    }
}
