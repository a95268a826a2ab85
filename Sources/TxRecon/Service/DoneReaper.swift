// DoneReaper: removes delivered and superseded snapshots from done/ once they
// are older than DoneRetention= (counted from the move into done/). A timer
// (ScanTimer) is armed only while done/ holds something, for when its
// oldest file expires. Runs on its own dispatch queue (directory scans
// block).
//
// A delivered snapshot, done/KEY, is the supersede rule's record of the
// key's last delivery, and the engine's thread may rename a fresh delivery onto
// the name between the scan's look at it and its removal: it is therefore
// renamed aside (done/.reaping-KEY) first and put back when what went aside
// is not the file judged expired (another inode, or the same inode number
// given to a file written since). One left aside (a crash, a failed put-back) is put back
// by the next scan when done/KEY is free, removed otherwise. Failure
// records and superseded snapshots are unlinked.
//
// A delivered snapshot is also the ledger's source (LedgerService): it is
// removed only once it moved into done/ before the ledger's watermark,
// `durableThrough`, so that whatever the ledger has not durably recorded
// is still in done/ for its catch-up. While the ledger lags (or cannot be
// written) such files stay, and the scan looks again later.
// Reports: a warning when a file cannot be removed.
import Dispatch
import Glibc
import Synchronization

final class DoneReaper: Sendable {
    private let directory: String
    private let retention: Int64
    /// The ledger's watermark (ms since 1970); nil: no ledger to wait for.
    private let durableThrough: (@Sendable () -> Int64)?
    private let log: any LogSink
    private let queue: DispatchQueue
    private let timer: ScanTimer
    /// The engine's count of finished items last observed.
    private let finished = Mutex(0)

    init(directory: String, retention: Duration, durableThrough: (@Sendable () -> Int64)? = nil, log: any LogSink) {
        self.directory = directory
        self.retention = retention.milliseconds
        self.durableThrough = durableThrough
        self.log = log
        queue = DispatchQueue(label: "txrecon.done-reaper")
        timer = ScanTimer(retention: retention.milliseconds, queue: queue)
    }

    /// Scans now, removing what has expired, and arms the timer for the rest.
    func start() {
        queue.async { self.reap() }
    }

    /// A scan as if the wall clock read `now`, waiting for it to end.
    /// // internal for testing
    func reap(asOf now: Int64) {
        queue.sync { self.reap(now: now) }
    }

    /// When the next scan is due (ms since 1970), if one is armed, once
    /// what was asked of the reaper's queue (an arming) has run.
    /// internal for testing
    var nextScanAt: Int64? {
        queue.sync {}
        return timer.armedFor
    }

    /// Called with the engine's count of finished (delivered or superseded)
    /// items: when it grew, done/ got something, so make sure a removal is
    /// scheduled by the time it expires (a timer armed later than that, by
    /// a scan made while the wall clock ran ahead, is armed again).
    func observe(finished: Int) {
        let now = Timestamp.nowMilliseconds()
        let grew = self.finished.withLock { last in
            defer { last = finished }
            return finished > last
        }
        if grew, timer.needsArming(by: now + retention) { queue.async { self.arm(at: now + self.retention) } }
    }

    func stop() {
        queue.sync { timer.disarm() }
    }

    private func reap(now: Int64 = Timestamp.nowMilliseconds()) {
        timer.scanStarts(at: now)
        let durable = durableThrough?() ?? .max
        var oldest: Int64?
        // Name by name as read, not a listing first: done/ holds every
        // delivery of the retention period, a million names or more.
        try? SystemCall.forEachName(in: directory) { bytes in
            guard let name = String(validating: bytes, as: UTF8.self) else { return }
            if name.hasPrefix(ReapingAside.prefix) { return recoverAside(name) }
            guard !name.hasPrefix(".") else { return }
            let path = directory + "/" + name
            guard let info = try? SystemCall.linkStatus(path) else { return }
            // The change time: the move into done/ (a rename or a link
            // sets it; the mtime is the producer's write, which `cp -p` or
            // `rsync -t` from a host whose clock runs ahead can put years
            // ahead, and kept the file, and every removal after it, that long).
            let changed = Int64(info.st_ctim.tv_sec) * 1000 + Int64(info.st_ctim.tv_nsec) / 1_000_000
            let isDelivery = !name.contains(".")
            if changed + retention <= now, !isDelivery || changed < durable {
                if isDelivery { removeDelivery(name, judged: info) } else { removeRecord(name) }
            } else {
                oldest = min(oldest ?? changed, changed)
            }
        }
        timer.disarm()
        if let oldest { arm(at: oldest + retention) }
    }

    /// Unlinks done/NAME, a failure record or a superseded snapshot.
    private func removeRecord(_ name: String) {
        let path = directory + "/" + name
        if unlink(path) != 0 && errno != ENOENT {
            log.write(LogEntry(.warning, "cannot remove done/\(LogText.escaped(name)): \(SpoolError("unlink", path))"))
        }
    }

    /// Removes done/NAME, a delivered snapshot judged expired as the file
    /// `judged` describes, unless a delivery has replaced it since.
    /// internal for testing
    func removeDelivery(_ name: String, judged: stat) {
        guard aside.setAside(name) else { return }
        if let info = try? SystemCall.linkStatus(aside.path(of: name)), WrittenFile(info) != WrittenFile(judged) {
            aside.putBack(name, takenBy: "delivered")
        } else {
            unlink(aside.path(of: name))
        }
    }

    /// Puts back what the last process left aside, and waits for it: at
    /// start, before the ledger's catch-up and the engine read done/. Both
    /// skip dotted names, so a delivery left at done/.reaping-KEY by a kill
    /// (one the ledger's lost last writes did not record) would be missing
    /// from both until the first scan, and a stale snapshot of KEY uploaded
    /// meanwhile compared with an older confirmation only.
    func putBackLeftAside() {
        queue.sync {
            try? SystemCall.forEachName(in: directory) { bytes in
                guard let name = String(validating: bytes, as: UTF8.self), name.hasPrefix(ReapingAside.prefix) else { return }
                recoverAside(name)
            }
        }
    }

    /// A file left aside by an earlier scan: put back when its name is free.
    private func recoverAside(_ asideName: String) {
        guard let name = ReapingAside.name(ofAside: asideName), !name.isEmpty, !name.contains(".") else { return }
        aside.putBack(name, takenBy: "delivered")
    }

    /// Where a delivered snapshot goes for the moment of its removal
    /// (ReapingAside), hidden from every reader of done/, which skip names
    /// with a dot.
    static let asidePrefix = ReapingAside.prefix
    private var aside: ReapingAside { ReapingAside(directory: directory, label: "done", log: log) }

    private func arm(at expiry: Int64) {
        timer.arm(at: expiry) { [weak self] in self?.reap() }
    }
}
