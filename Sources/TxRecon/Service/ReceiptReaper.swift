// ReceiptReaper: removes a receipt from receipts/ once nothing can need it.
//
// A receipt in receipts/HEX is removed when both hold:
//   - it has not been used for DoneRetention= (its mtime: intake stored
//     it, or an identical upload came again, or an item naming it was
//     delivered, ReceiptStore.noteUse), so done/ no longer keeps an item of
//     it, which the supersede rule, `txrecon show` and a replay read; with
//     DoneRetention=0, for `minimumAge`, so that a split writing its parts
//     in tmp/ (never looked at here) finds its receipt still there;
//   - no file in new/, queue/, hold/ or rejected/ names it, the spool's own
//     and those of every destination with a directory in destinations/,
//     configured or not: a pending, held or rejected purchase is kept
//     readable however long it waits (a destination's file removed and put
//     back later, docs/remove-destination.md, finds its queue as it was),
//     and a requeue-rejected or a release finds its receipt. The
//     directories are listed again at each look, so a destination a reload
//     added counts at once.
// Files that name receipts are small (a part is a hundred bytes and a
// context); only files of at most `partLimit` bytes are read to find them,
// and only when some receipt is old enough to go.
//
// As DoneReaper: a timer (ScanTimer) armed only while receipts/ holds
// something (the store says when it stored one), for when the oldest
// expires, on its own dispatch queue (scans block).
// A receipt judged removable is renamed aside (receipts/.reaping-HEX, where
// ReceiptStore.read still finds it), the referring directories are read
// again in the opposite order (a part that moved between two of them while
// the first pass read them, a requeue-rejected or a release, is found by
// the second), and it is put back when something names it now or it was
// touched meanwhile (an identical upload, a delivery); only then is it
// removed. One left aside by a crash is put back by ReceiptStore's
// `restoreAtStart`, before any engine or intake reads, and by the next
// scan should a put-back fail while running.
// Reports: a warning when a receipt cannot be removed or a directory cannot
// be read (the receipt is then kept).
import Dispatch
import Glibc

final class ReceiptReaper: Sendable {
    private let layout: SpoolLayout
    /// receipts/.
    private let directory: String
    private let retention: Int64
    private let log: any LogSink
    private let queue: DispatchQueue
    private let timer: ScanTimer

    /// Files larger than this name no receipt: a part is its receipt's name,
    /// a transaction id and a context of at most 4 KiB.
    static let partLimit = 8 << 10
    /// What a receipt is kept at least, whatever DoneRetention= says.
    static let minimumAge: Int64 = 10 * 60_000
    /// Where a receipt goes for the moment of its removal.
    static let asidePrefix = ReceiptStore.asidePrefix

    /// Called once receipts are aside, before the second look: tests put a
    /// part in place there, as a requeue or a release would.
    private let afterSettingAside: @Sendable () -> Void

    /// `retention`: DoneRetention=.
    init(layout: SpoolLayout, retention: Duration, log: any LogSink,
         afterSettingAside: @escaping @Sendable () -> Void = {}) {
        self.layout = layout
        directory = layout.receipts
        self.retention = max(retention.milliseconds, Self.minimumAge)
        self.log = log
        self.afterSettingAside = afterSettingAside
        queue = DispatchQueue(label: "txrecon.receipt-reaper")
        timer = ScanTimer(retention: self.retention, queue: queue)
    }

    /// Scans now, removing what may go, and arms the timer for the rest.
    func start() {
        queue.async { self.reap() }
    }

    /// A scan as if the wall clock read `now`, waiting for it to end. // internal for testing
    func reap(asOf now: Int64) {
        queue.sync { self.reap(now: now) }
    }

    /// When the next scan is due (ms since 1970), if one is armed. // internal for testing
    var nextScanAt: Int64? {
        queue.sync {}
        return timer.armedFor
    }

    /// A receipt was stored (or touched): make sure a scan is armed for
    /// when it may go.
    func noteStored() {
        let now = Timestamp.nowMilliseconds()
        guard timer.needsArming(by: now + retention) else { return }
        queue.async { self.arm(at: now + self.retention) }
    }

    func stop() {
        queue.sync { timer.disarm() }
    }

    private func reap(now: Int64 = Timestamp.nowMilliseconds()) {
        timer.scanStarts(at: now)
        var expired: [(name: String, judged: stat)] = []
        var oldest: Int64?
        try? SystemCall.forEachName(in: directory) { bytes in
            guard let name = String(validating: bytes, as: UTF8.self) else { return }
            if name.hasPrefix(ReapingAside.prefix) { return recoverAside(name) }
            guard ReceiptPart.isReceiptName(name), let info = try? SystemCall.linkStatus(directory + "/" + name)
            else { return }
            let lastUse = Spool.modifiedMilliseconds(info)
            if lastUse + retention <= now {
                expired.append((name, info))
            } else {
                oldest = min(oldest ?? lastUse, lastUse)
            }
        }
        var next = oldest.map { $0 + retention }
        if !expired.isEmpty {
            if let named = namedReceipts(in: referrers()) {
                var unnamed: [(name: String, judged: stat)] = []
                for (name, judged) in expired {
                    guard named.contains(name) else {
                        unnamed.append((name, judged))
                        continue
                    }
                    // Still needed: its use is now, looked at again a
                    // retention from now.
                    _ = try? SystemCall.touch(directory + "/" + name) // ignored: kept either way
                    next = min(next ?? now + retention, now + retention)
                }
                remove(unnamed)
            } else {
                // Kept; tried again after the shortest interval.
                next = now
            }
        }
        timer.disarm()
        if let next { arm(at: next) }
    }

    /// The directories whose files may name a receipt: the spool's new/,
    /// rejected/, queue/ and hold/, and every destination's new/, queue/ and
    /// hold/ found in destinations/; nil (keep every receipt) when
    /// destinations/ cannot be listed.
    private func referrers() -> [String]? {
        var directories = [layout.new, layout.rejected, layout.queue, layout.hold]
        do throws(SpoolError) {
            try SystemCall.forEachName(in: layout.destinations) { bytes in
                guard let name = String(validating: bytes, as: UTF8.self), !name.hasPrefix("."),
                      let info = try? SystemCall.linkStatus(layout.destinations + "/" + name),
                      info.st_mode & S_IFMT == S_IFDIR else { return }
                let destination = layout.destination(name)
                directories += [destination.new, destination.queue, destination.hold]
            }
        } catch where error.code == ENOENT {
            // A spool that never had further destinations.
        } catch {
            log.write(LogEntry(.warning, "cannot look for receipt parts in \(layout.destinations): \(error); no "
                               + "receipt is removed until it can be read"))
            return nil
        }
        return directories
    }

    /// The receipts some file in `directories` names, read in that order;
    /// nil when they (or one of them) cannot be read: nothing is removed.
    private func namedReceipts(in directories: [String]?) -> Set<String>? {
        guard let directories else { return nil }
        var named = Set<String>()
        for referrer in directories {
            do throws(SpoolError) {
                try SystemCall.forEachName(in: referrer) { bytes in
                    guard let name = String(validating: bytes, as: UTF8.self), !name.hasPrefix("."),
                          !name.hasSuffix(".state"), !name.hasSuffix(".reason") else { return }
                    if let receipt = Self.receiptNamed(by: referrer + "/" + name) { named.insert(receipt) }
                }
            } catch where error.code == ENOENT {
                continue
            } catch {
                log.write(LogEntry(.warning, "cannot look for receipt parts in \(referrer): \(error); no receipt is "
                                   + "removed until it can be read"))
                return nil
            }
        }
        return named
    }

    /// The receipt the part at `path` names, if it is one.
    static func receiptNamed(by path: String) -> String? {
        guard let info = try? SystemCall.linkStatus(path), info.st_mode & S_IFMT == S_IFREG,
              Int(info.st_size) <= partLimit,
              let bytes = try? SystemCall.readFile(path, limit: partLimit),
              bytes.first == UInt8(ascii: "{"),
              let name = (try? JSONValue.parse(bytes))?[InputDecoder.receiptNameMember]?.stringValue,
              ReceiptPart.isReceiptName(name) else { return nil }
        return name
    }

    /// Removes the receipts judged removable (each as `judged` describes
    /// it): renamed aside, then the referring directories read again in the
    /// opposite order, and each put back if something names it now or it
    /// was used since (its mtime moved), else unlinked.
    /// internal for testing
    func remove(_ candidates: [(name: String, judged: stat)]) {
        var aside: [(name: String, judged: stat)] = []
        for candidate in candidates where setting.setAside(candidate.name) {
            aside.append(candidate)
        }
        guard !aside.isEmpty else { return }
        afterSettingAside()
        // Unreadable now: every one of them is kept.
        let named = namedReceipts(in: referrers()?.reversed()) ?? Set(aside.map(\.name))
        for (name, judged) in aside {
            let path = setting.path(of: name)
            if named.contains(name) {
                setting.putBack(name, takenBy: "used")
            } else if let info = try? SystemCall.linkStatus(path),
                      Spool.modifiedMilliseconds(info) != Spool.modifiedMilliseconds(judged) {
                setting.putBack(name, takenBy: "used")
            } else {
                unlink(path)
            }
        }
    }

    /// A receipt left aside by an earlier scan: put back when its name is free.
    private func recoverAside(_ asideName: String) {
        guard let name = ReapingAside.name(ofAside: asideName), ReceiptPart.isReceiptName(name) else { return }
        setting.putBack(name, takenBy: "used")
    }

    /// receipts/.reaping-NAME while a receipt is removed (ReapingAside);
    /// put back unless intake stored the receipt afresh meanwhile (then the
    /// one aside, the same bytes, goes).
    private var setting: ReapingAside { ReapingAside(directory: directory, label: "receipts", log: log) }

    private func arm(at expiry: Int64) {
        timer.arm(at: expiry) { [weak self] in self?.reap() }
    }
}
