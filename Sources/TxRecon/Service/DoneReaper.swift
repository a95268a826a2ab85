// DoneReaper: removes delivered and superseded snapshots from done/ once they
// are older than DoneRetention=. A timer is armed only while done/ holds
// something, for when its oldest file expires; scans are at least
// `minimumInterval` apart so a busy done/ is not rescanned every second.
// Runs on its own dispatch queue (directory scans block).
//
// A delivered snapshot, done/KEY, is the supersede rule's record of the
// key's last delivery, and a curl thread may rename a fresh delivery onto
// the name between the scan's look at it and its removal: it is therefore
// renamed aside first and put back when what went aside is not the file
// judged expired. Failure records and superseded snapshots are unlinked.
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
    private let log: any LogSink
    private let queue = DispatchQueue(label: "txrecon.done-reaper")
    private let state = Mutex(State())

    /// Scans are at least this far apart: a tenth of the retention, between
    /// one minute and one hour.
    var minimumInterval: Int64 { min(3_600_000, max(60_000, retention / 10)) }

    init(directory: String, retention: Duration, log: any LogSink) {
        self.directory = directory
        self.retention = retention.milliseconds
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
        var oldest: Int64?
        // Name by name as read, not a listing first: done/ holds every
        // delivery of the retention period, a million names or more.
        try? SystemCall.forEachName(in: directory) { bytes in
            guard let name = String(validating: bytes, as: UTF8.self), !name.hasPrefix(".") else { return }
            let path = directory + "/" + name
            guard let info = try? SystemCall.linkStatus(path) else { return }
            let modified = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
            // A rename keeps the mtime of the producer's write, so use the
            // later of mtime and ctime (the move into done/).
            let changed = Int64(info.st_ctim.tv_sec) * 1000 + Int64(info.st_ctim.tv_nsec) / 1_000_000
            let finishedAt = max(modified, changed)
            if finishedAt + retention <= now {
                if name.contains(".") { removeRecord(name) } else { removeDelivery(name, judged: FileIdentity(info)) }
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
    /// `judged`, unless a delivery has replaced it since. internal for testing
    func removeDelivery(_ name: String, judged: FileIdentity) {
        let path = directory + "/" + name
        let aside = directory + "/" + Self.asideName
        guard rename(path, aside) == 0 else {
            if errno != ENOENT {
                log.write(LogEntry(.warning, "cannot remove done/\(LogText.escaped(name)): \(SpoolError("rename", path))"))
            }
            return
        }
        if let info = try? SystemCall.linkStatus(aside), FileIdentity(info) != judged {
            // A fresh delivery; EEXIST: a fresher one took the name since.
            if link(aside, path) != 0 && errno != EEXIST {
                let error = SpoolError("link", path)
                log.write(LogEntry(.warning, "done/\(LogText.escaped(name)), delivered while it was being removed, "
                                   + "is at done/\(Self.asideName) and could not be put back (\(error)): rename it back"))
                return
            }
        }
        unlink(aside)
    }

    /// Where a delivered snapshot goes for the moment of its removal; hidden
    /// from the scan, like every name starting with a dot.
    static let asideName = ".reaping"

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
