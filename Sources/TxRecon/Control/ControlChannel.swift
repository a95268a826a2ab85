// ControlChannel: the operator's requests in ctl/ (`txrecon release`,
// `retry`, `requeue-rejected`, `replay`, ...), read, executed and answered
// in NAME.result beside them. A request for the engines goes to every
// destination's engine, or to the one it names; a replay is selected in
// done/ and staged into queue/ here, off the engines' thread; a
// requeue of rejected files is made here (RejectedRequeue). What cannot be
// read as a request is answered and set aside. Intake calls `execute` on
// its thread when ctl/ changes, at every scan (its watcher watches ctl/
// beside new/) and after each whole batch of drops it hands over, so a
// request waits at most for the batch intake is handing over (and that
// batch's wait for room in the engine, a second at most), not for
// a backlog.
// Reports: one notice per request executed; warnings for what is refused
// or set aside; errors when an answer cannot be written.
import Glibc

struct ControlChannel: Sendable {
    let spool: Spool
    /// The destinations, `[Backend]` first.
    let routes: [DeliveryRoute]
    let events: ItemEvents
    /// receipts/, which a replayed part of a receipt upload must still find.
    let receipts: ReceiptLibrary
    private var log: any LogSink { events.sink }
    private var engine: DeliveryEngine { routes[0].engine }

    /// Executes requests in ctl/: answer in NAME.result, then NAME removed.
    /// A request that ran is removed even when its answer cannot be written
    /// (a directory a producer put at NAME.result, a full disk): run again
    /// at every scan, a replay would send done/ again each time, and a
    /// `release --all` would release what was held since. `requeued` tells
    /// whether rejected files went back into new/. `maximumSize` is
    /// MaxFileSize= now, the largest file a replay copies.
    func execute(_ names: [String], maximumSize: Int) -> (failures: IntakeBacklog.Failures, requeued: Bool) {
        var failures = IntakeBacklog.Failures()
        var requeued = false
        let directory = spool.layout.ctl
        removeUnreadAnswers(names.filter { !$0.hasPrefix(".") && $0.hasSuffix(".result") })
        for name in names where !name.hasPrefix(".") && !name.hasSuffix(".result") {
            let path = directory + "/" + name
            let contents: RegularFile.Contents
            do {
                contents = try RegularFile.read(path, limit: ControlChannel.maximumRequestSize, followingLinks: false)
            } catch .missing {
                continue
            } catch {
                failures.count += setAsideRequest(name, because: "\(error)") ? 0 : 1
                continue
            }
            var result = ControlResult()
            let request = ControlRequest(json: contents.bytes)
            if let destination = request?.destination, !routes.contains(where: { $0.name == destination }) {
                result.skipped.append((destination, "no such destination; the destinations are "
                                       + routes.map(\.name).joined(separator: ", ")))
            } else if let request {
                let routes = self.routes.filter { request.destination == nil || $0.name == request.destination }
                if request.command == .replay {
                    result = replay(request, askedBy: contents, name: name, maximumSize: maximumSize)
                } else if request.command == .requeueRejected {
                    result = RejectedRequeue.perform(request, spool: spool, events: events)
                    // rejected/'s count follows from intake's listing (RejectedCount).
                    if !result.applied.isEmpty { requeued = true }
                } else {
                    result = waitFor {
                        var results: [(destination: String, result: ControlResult)] = []
                        for route in routes { results.append((route.name, await route.engine.perform(request))) }
                        return ControlResult(merging: results)
                    }
                }
                log.write(LogEntry(.notice, "operator request \(request.command.rawValue): applied to \(result.applied.count), "
                                   + "skipped \(result.skipped.count)"))
            } else {
                result.skipped.append((name, "not a request this txrecon understands"))
                log.write(LogEntry(.warning, "ctl/\(LogText.escaped(name)) is not a valid request; answered and removed"))
            }
            do {
                // 0640: an answer group txrecon could write (or link, under
                // fs.protected_hardlinks) could be made into another one.
                try SystemCall.replaceFile(path + ".result", result.json.serialized,
                                           temporaryName: directory + "/.tmp-" + name, sync: false, mode: 0o640)
                try SystemCall.unlinkIfPresent(path)
            } catch {
                let removed = unlink(path) == 0 || errno == ENOENT
                let what = request.map { "the \($0.command.rawValue)" } ?? "the request"
                log.write(LogEntry(.error, "cannot answer ctl/\(LogText.escaped(name)): \(error); \(what) ran "
                                   + "(\(result.applied.count) applied, \(result.skipped.count) skipped) and its request "
                                   + (removed ? "is removed so that it does not run again"
                                      : "could not be removed either: remove ctl/\(LogText.escaped(name)) by hand, or it runs again")))
                failures.record(error)
            }
        }
        return (failures, requeued)
    }

    /// Executes a replay: only root may ask for one (a replay can send a
    /// great deal, and producers in group txrecon can write ctl/). The
    /// request file's owner is who created it: the kernel sets it, and only
    /// root can chown a file to root. It must also be writable by root
    /// alone and have one name: a root file that group txrecon can write
    /// could be rewritten into a replay, and one with a second name (a link
    /// a producer kept, which fs.protected_hardlinks allows to whoever can
    /// read and write the file) could be put back into ctl/. The snapshots
    /// are selected in done/ and copied into queue/ under a temporary name
    /// here, off the engine's thread, and handed to the engine in batches,
    /// so that deliveries go on in between; queue/ is synced after each.
    private func replay(_ request: ControlRequest, askedBy file: RegularFile.Contents, name: String,
                        maximumSize: Int) -> ControlResult {
        var result = ControlResult()
        let refusal: String? = if file.owner != 0 {
            "ctl/\(name) belongs to uid \(file.owner)"
        } else if file.mode & 0o022 != 0 {
            "ctl/\(name) is writable by others than root (mode \(String(file.mode & 0o777, radix: 8)))"
        } else if file.links != 1 {
            "ctl/\(name) has \(file.links) names"
        } else {
            nil
        }
        if let refusal {
            result.skipped.append(("replay", "only root may ask for a replay; \(refusal)"))
            log.write(LogEntry(.warning, "ctl/\(LogText.escaped(name)): a replay not asked for by root alone "
                               + "(\(refusal)); refused"))
            return result
        }
        for target in request.targets where !ControlRequest.isValid(target, for: .replay) {
            result.skipped.append((target, ControlRequest.invalidTargetReason))
        }
        let keys = request.all ? nil : request.targets.compactMap { ItemKey($0) }
        var results: [(destination: String, result: ControlResult)] = []
        for route in routes where request.destination == nil || route.name == request.destination {
            results.append((route.name, replay(keys, request, on: route, maximumSize: maximumSize)))
        }
        let merged = ControlResult(merging: results)
        result.applied += merged.applied
        result.skipped += merged.skipped
        return result
    }

    /// How long an answer waits in ctl/ for the command that asked: it
    /// reads and removes it within its timeout (a minute); one older was
    /// never read (the command gave up, the daemon was stopped when it
    /// asked, or an operator not root could not remove it from the sticky
    /// ctl/), and would stay for good.
    static let answerRetention: Int64 = 86_400_000

    /// Removes the answers among `names` older than `answerRetention`.
    private func removeUnreadAnswers(_ names: [String]) {
        let limit = Timestamp.nowMilliseconds() - ControlChannel.answerRetention
        for name in names {
            let path = spool.layout.ctl + "/" + name
            guard let info = try? SystemCall.linkStatus(path), info.st_mode & S_IFMT == S_IFREG,
                  Spool.modifiedMilliseconds(info) < limit else { continue }
            unlink(path)
        }
    }

    /// A replay's part on one destination: its done/, its engine.
    private func replay(_ keys: [ItemKey]?, _ request: ControlRequest, on route: DeliveryRoute,
                        maximumSize: Int) -> ControlResult {
        var result = ControlResult()
        let (spool, engine) = (route.spool, route.engine)
        let selection: (found: [DeliveredSnapshot], missing: [ItemKey], outside: [DeliveredSnapshot])
        do {
            selection = try spool.deliveredSnapshots(of: keys, since: request.since, until: request.until)
        } catch {
            result.skipped.append(("replay", "\(spool.layout.relative(.done))/ cannot be read: \(error)"))
            return result
        }
        for key in selection.missing {
            result.skipped.append((key.rawValue, "not in done/: never delivered, or delivered longer ago than "
                                   + "DoneRetention= keeps"))
            result.nothingToDoHere.insert(key.rawValue)
        }
        for snapshot in selection.outside {
            result.skipped.append((snapshot.key.rawValue, "its delivered snapshot was received "
                                   + "\(Timestamp.rfc3339(milliseconds: snapshot.receivedAt)), outside --since/--until"))
        }
        var start = 0
        while start < selection.found.count {
            let end = min(start + ControlChannel.replayBatch, selection.found.count)
            // The copies (and their fsyncs) are made here; the engine only names them.
            var staged: [DeliveredSnapshot] = []
            for snapshot in selection.found[start..<end] {
                if let refusal = receiptRefusal(of: snapshot, in: spool) {
                    result.skipped.append((snapshot.key.rawValue, refusal))
                    continue
                }
                do {
                    staged.append(try spool.stageReplay(snapshot, maximumSize: maximumSize))
                } catch where error.code == EFBIG {
                    result.skipped.append((snapshot.key.rawValue, "done/\(snapshot.key.fileName) is larger than "
                                           + "MaxFileSize= (\(maximumSize) bytes): the setting was lowered since "
                                           + "it was delivered, or the file was changed since; not copied"))
                } catch {
                    result.skipped.append((snapshot.key.rawValue, "its copy from done/ failed: \(error)"))
                }
            }
            start = end
            let batch = staged
            guard !batch.isEmpty else { continue }
            let (answer, full) = waitFor { await engine.replay(batch) }
            result.applied += answer.applied
            result.skipped += answer.skipped
            result.nothingToDoHere.formUnion(answer.nothingToDoHere)
            if let full {
                // Copying the rest only to discard it would cost an fsync
                // each, for nothing, while intake waits.
                for snapshot in selection.found[start...] { result.skipped.append((snapshot.key.rawValue, full)) }
                start = selection.found.count
            }
            if !answer.applied.isEmpty {
                do {
                    try spool.syncQueue()
                } catch {
                    log.write(LogEntry(.warning, "replay: queue/ could not be synced (\(error)); a crash now may "
                                       + "lose the copies queued, not what done/ holds: replay again after one"))
                }
            }
        }
        return result
    }

    /// Why a delivered part of a receipt upload cannot be replayed: done/
    /// may keep it longer than receipts/ keeps its receipt
    /// (docs/verification.md "StoreKit 1 receipts"), and a copy naming none
    /// would only be held.
    /// nil for anything else, and for a part whose receipt is stored, which
    /// is then noted as used, so that it stays while the copy waits.
    private func receiptRefusal(of snapshot: DeliveredSnapshot, in spool: Spool) -> String? {
        guard let receipt = ReceiptReaper.receiptNamed(by: spool.path(.done, snapshot.key)),
              !receipts.store.noteUse(receipt) else { return nil }
        return "it names the receipt \(receipt), which receipts/ no longer holds (it goes DoneRetention= after its "
            + "last use); upload the receipt again: what the destination has not confirmed is delivered"
    }

    /// Snapshots a replay hands the engine at a time.
    static let replayBatch = 1000

    /// A request is a command and a list of names: a few KiB, or 8,000
    /// keys in 1 MiB.
    static let maximumRequestSize = 1 << 20

    /// A name in ctl/ that cannot be read as a request (a directory, a
    /// symbolic link, a FIFO, larger than 1 MiB, unreadable) is answered,
    /// so a waiting `txrecon` command learns why, and renamed to
    /// ctl/.rejected-NAME, which no pass reads again, for a person to look
    /// at. Returns false when that failed (it is tried at the next scan).
    private func setAsideRequest(_ name: String, because problem: String) -> Bool {
        let directory = spool.layout.ctl
        let base = ".rejected-" + Spool.prefix(of: name, maximumBytes: 200)
        var aside = base
        var result = ControlResult()
        result.skipped.append((name, "not a request txrecon can read: it \(problem)"))
        do throws(SpoolError) {
            var count = 0
            while !(try SystemCall.renameNoReplace(directory + "/" + name, directory + "/" + aside)) {
                count += 1
                aside = base + ".\(count)"
            }
            try SystemCall.replaceFile(directory + "/" + name + ".result", result.json.serialized,
                                       temporaryName: directory + "/.tmp-" + aside, sync: false, mode: 0o640)
        } catch {
            log.write(LogEntry(.error, "ctl/\(LogText.escaped(name)) \(problem) and cannot be set aside: \(error); "
                               + "it is tried again shortly"))
            return false
        }
        log.write(LogEntry(.warning, "ctl/\(LogText.escaped(name)) is not a request txrecon can read (it \(problem)); "
                           + "answered and set aside as ctl/\(LogText.escaped(aside))"))
        return true
    }

    /// Runs async work on the engines' thread and blocks the caller's
    /// (intake's, dedicated) thread until it is done.
    private func waitFor<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        engine.executor.runBlocking(work)
    }
}
