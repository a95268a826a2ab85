// DoneReaper: removes delivered and superseded snapshots from done/ once they
// are older than DoneRetention=. A timer is armed only while done/ holds
// something, for when its oldest file expires; scans are at least
// `minimumInterval` apart so a busy done/ is not rescanned every second.
// Runs on its own dispatch queue (directory scans block).
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
    private struct State {
        var timer: (any DispatchSourceTimer)?
        var armedFor: Int64?
        var lastScan: Int64 = 0
        var finished = 0
    }

    private let directory: String
    private let retention: Int64
    /// The ledger's watermark (ms since 1970); nil: no ledger to wait for.
    private let durableThrough: (@Sendable () -> Int64)?
    private let log: any LogSink
    private let queue = DispatchQueue(label: "txrecon.done-reaper")
    private let state = Mutex(State())

    /// Scans are at least this far apart: a tenth of the retention, between
    /// one minute and one hour.
    var minimumInterval: Int64 { min(3_600_000, max(60_000, retention / 10)) }

    init(directory: String, retention: Duration, durableThrough: (@Sendable () -> Int64)? = nil, log: any LogSink) {
        self.directory = directory
        self.retention = retention.milliseconds
        self.durableThrough = durableThrough
        self.log = log
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

    /// When the next scan is due (ms since 1970), if one is armed. // internal for testing
    var nextScanAt: Int64? { state.withLock { $0.armedFor } }

    /// Called with the engine's count of finished (delivered or superseded)
    /// items: when it grew, done/ got something, so make sure a removal is
    /// scheduled.
    func observe(finished: Int) {
        let now = Timestamp.nowMilliseconds()
        let needsArming = state.withLock { state -> Bool in
            defer { state.finished = finished }
            return finished > state.finished && state.armedFor == nil
        }
        if needsArming { queue.async { self.arm(at: now + self.retention) } }
    }

    func stop() {
        queue.sync {
            state.withLock { state in
                state.timer?.cancel()
                state.timer = nil
                state.armedFor = nil
            }
        }
    }

    private func reap(now: Int64 = Timestamp.nowMilliseconds()) {
        state.withLock { $0.lastScan = now }
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
            let modified = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
            // A rename keeps the mtime of the producer's write, so use the
            // later of mtime and ctime (the move into done/).
            let changed = Int64(info.st_ctim.tv_sec) * 1000 + Int64(info.st_ctim.tv_nsec) / 1_000_000
            let finishedAt = max(modified, changed)
            let isDelivery = !name.contains(".")
            if finishedAt + retention <= now, !isDelivery || changed < durable {
                if isDelivery { removeDelivery(name, judged: info) } else { removeRecord(name) }
            } else {
                oldest = min(oldest ?? finishedAt, finishedAt)
            }
        }
        state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            state.armedFor = nil
        }
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
        let at = max(expiry, state.withLock { $0.lastScan } + minimumInterval)
        state.withLock { state in
            if let armed = state.armedFor, armed <= at { return }
            state.timer?.cancel()
            let timer = DispatchSource.makeTimerSource(queue: queue)
            let delay = max(0, at - Timestamp.nowMilliseconds())
            timer.schedule(wallDeadline: .now() + .milliseconds(Int(delay)), leeway: .seconds(1))
            timer.setEventHandler { [weak self] in self?.reap() }
            timer.resume()
            state.timer = timer
            state.armedFor = at
        }
    }
}
