// Intake: takes drops from new/ and requests from ctl/, on its own thread.
//
// For each name in new/: read it without blocking (Spool.readDrop), decode it
// (InputDecoder), verify its App Store signatures (SignedDataVerifier, unless
// Mode=none) — a larger batch on helper threads at once (ExaminerPool) — and
// then, on this thread and in the listed order, either set it aside in
// rejected/ with its reason or hand it to the engine, which decides between
// queue/ and done/ (superseded). A
// history page is set aside and split into one drop per transaction first
// (Spool+Aside), and each is verified on its own. A receipt upload,
// verified whole, is stored once in receipts/ and split into a small part
// per item on a thread of its own (ReceiptUploads, ReceiptSplitter), which
// hands the parts over itself; none is written for what every destination
// already confirmed or has pending (ReceiptSplitPlan). Files in
// queue/ have passed this; the engine only decodes them again. Requests in
// ctl/ are read and answered by ControlChannel, on this thread between
// batches of drops (executeWaitingRequests) and when inotify reports them.
//
// With further destinations (several routes), each verified drop is linked
// into the inbox of every destination whose [Match] takes it and removed
// from new/ (Spool+FanOut) before any engine sees it; each engine then takes
// its copy from its own inbox. A drop no destination takes is rejected
// (`no-destination`). Copies an engine could not take, or found at start,
// are handed to it again by the next full scan (Intake+Destinations).
// Operator requests apply to every destination, or to the one they name.
//
// A file renamed into new/ or closed by its writer is taken at once, and so
// is a complete one found by a scan (start-up, inotify overflow). A file
// seen created in new/ waits for its writer's close however long the
// writer pauses (taken earlier only once it decodes, or as it stands after
// an hour unchanged: IntakeBacklog.inPlaceLimit). One found by a scan that
// does not decode and was modified within the last IntakeBacklog.settleTime
// is looked at again later, so a file still being written in place is not
// rejected half-written. A drop the spool could
// not take stays in new/ and is retried; lack of space pauses intake until a
// scan succeeds again (IntakeBacklog).
//
// Everything here blocks (file reads, chain validation, waiting for credit),
// which is why it runs on a dedicated thread and never on Swift's
// cooperative pool. Batches go to the engine by message with credit
// (IntakeHandOff): intake waits only while the engine's load and what is in
// transit leave no room, which is the back-pressure: a flood of drops waits
// in new/, not in memory. What intake only tells the engine (the counts of
// its own moves, a pause, the hook to read new/ again) is posted too
// (DeliveryEngine.post); a receipt split's look at the pending versions and
// the operator's requests wait for the engine's answer.
// Reports: one log entry per rejection; errors reading the spool; intake
// paused and resumed (MessageID.intakePaused, .intakeResumed, and STATUS).
import Glibc
import Synchronization

final class Intake: Sendable {
    /// What intake needs from the configuration; replaceable on reload.
    struct Settings: Sendable, Equatable {
        var maximumFileSize: Int
        var acceptEnvelopes: Bool
        /// What App Store signed data must satisfy; nil with Mode=none.
        var verification: SignedDataPolicy?
        /// Which drops each route takes, in the order of the routes.
        var matches: [DestinationMatch] = [DestinationMatch()]
        /// The apps, for the journal's entry of a verified drop no
        /// destination takes.
        var apps = AppDirectory([])
    }

    /// Drops handed to the engine at once: large enough to amortize the hop
    /// to the actor, small enough to keep latency low under a burst.
    static let batchSize = 256
    /// Names a scan of new/ reads before it takes them: a backlog of a
    /// million drops is listed a part at a time, so intake's memory does not
    /// grow with it (with a million drops waiting, listing them whole first
    /// raised the daemon's peak RSS from 31 to 107 MiB).
    static let scanPart = 4096

    let spool: Spool
    /// The destinations, `[Backend]` first; more than one: drops fan out.
    let routes: [DeliveryRoute]
    /// `[Backend]`'s engine, which also counts what intake rejects.
    var engine: DeliveryEngine { routes[0].engine }
    var fansOut: Bool { routes.count > 1 }
    private let watcher: InboxWatcher
    /// With further destinations: the routes whose engines said they are
    /// full; their copies wait in their inboxes (Intake+Destinations).
    let fullRoutes = Mutex<Set<Int>>([])
    let events: ItemEvents
    let log: any LogSink
    let settings: Mutex<Settings>
    /// The last version a destination (by name) confirmed for a key, as
    /// the ledger remembers it; every drop handed to an engine carries its
    /// destination's (Drop.confirmed), looked up here, on intake's thread,
    /// so that the engine's thread never waits on the ledger's file.
    let confirmedVersion: @Sendable (_ destination: String, _ key: ItemKey) -> ItemVersion?
    /// What Apple added that this release does not know, by name, as far
    /// as a warning was logged for it: one per name and process.
    private let reportedNovelties = Mutex<Set<AppleNovelty>>([])
    /// receipts/: where a receipt upload's receipt is stored, and what the
    /// parts of one are read through.
    let receipts: ReceiptLibrary
    /// What the destinations confirmed: the seam a receipt's split asks
    /// (ConfirmedVersions); unless one is given, the ledger's answer, else
    /// done/'s (DoneConfirmations).
    private let confirmations: ConfirmationSource
    /// The operator's requests in ctl/, executed on this thread between batches of drops.
    private let control: ControlChannel

    convenience init(spool: Spool, engine: DeliveryEngine, watcher: InboxWatcher, settings: Settings, log: any LogSink) {
        self.init(spool: spool, routes: [DeliveryRoute(name: Destination.primaryName, engine: engine, spool: spool)],
                  watcher: watcher, settings: settings, log: log)
    }

    init(spool: Spool, routes: [DeliveryRoute], watcher: InboxWatcher, settings: Settings, log: any LogSink,
         confirmedVersion: @escaping @Sendable (_ destination: String, _ key: ItemKey) -> ItemVersion? = { _, _ in nil },
         receipts: ReceiptLibrary? = nil, confirmations: ConfirmationSource? = nil) {
        precondition(!routes.isEmpty && settings.matches.count == routes.count)
        self.confirmedVersion = confirmedVersion
        self.spool = spool
        self.routes = routes
        self.watcher = watcher
        self.settings = Mutex(settings)
        self.log = log
        self.events = ItemEvents(sink: log)
        self.receipts = receipts ?? ReceiptLibrary(store: ReceiptStore(layout: spool.layout))
        self.receipts.store.limitReads(to: settings.maximumFileSize)
        self.confirmations = confirmations ?? DoneConfirmations.source(routes, ledger: confirmedVersion)
        self.control = ControlChannel(spool: spool, routes: routes, events: events, receipts: self.receipts)
    }

    /// MaxFileSize= now.
    private var maximumFileSize: Int { settings.withLock { $0.maximumFileSize } }

    func reconfigure(_ settings: Settings) {
        precondition(settings.matches.count == routes.count)
        self.settings.withLock { $0 = settings }
        receipts.store.limitReads(to: settings.maximumFileSize)
    }

    /// Starts the intake thread: it first executes what is waiting in ctl/
    /// and takes everything already in new/, then calls `ready` (once), then
    /// follows inotify until `stop()`. When new/ holds more than the engine
    /// takes at once, `ready` comes as soon as the scan has to wait for
    /// deliveries to make room, and the scan goes on: start-up never waits
    /// for a backlog to be delivered (systemd would give up on the start,
    /// and a stop would wait behind it). `lost` is called (once) with a
    /// sentence for the operator if new/ or ctl/ disappears or becomes
    /// inaccessible, after which the thread ends.
    func start(ready: @escaping @Sendable () -> Void, lost: @escaping @Sendable (String) -> Void) throws(ThreadStartError) {
        let ready = OneShot(ready)
        // Each thread that hands drops over has its own link to each engine.
        let senders = try routes.map { route throws(ThreadStartError) in
            try IntakeHandOff(engine: route.engine, sender: "txrecon-intake")
        }
        let splitSenders = try routes.map { route throws(ThreadStartError) in
            try IntakeHandOff(engine: route.engine, sender: "txrecon-split")
        }
        let pool = try ExaminerPool(helpers: ExaminerPool.defaultHelperCount)
        let uploads = ReceiptUploads(
            spool: spool, receipts: receipts, destinations: routes.map(\.name), events: events, log: log,
            confirmations: confirmations,
            hand: { [unowned self] drops, rejected in
                var failures = IntakeBacklog.Failures()
                let full = hand(drops, via: splitSenders, rejected: rejected, failures: &failures, whenWaiting: {})
                settle(splitSenders, &failures)
                return ReceiptUploads.HandOff(full: full, failures: failures)
            },
            pendingVersions: { [unowned self] keys in pendingVersions(of: keys) })
        let splitter: ReceiptSplitter
        do {
            splitter = try ReceiptSplitter(work: { job, delay, splitter in
                uploads.run(job, delayIfFailed: delay, splitter: splitter)
            }, rescan: { [watcher] in watcher.requestRescan() })
        } catch {
            pool.close()
            throw error
        }
        do {
            try DedicatedThread.start(name: "txrecon-intake") { [self] in
                defer {
                    pool.close()
                    splitter.close()
                }
                follow(Examiners(pool: pool, uploads: uploads, splitter: splitter, senders: senders), ready: ready,
                       lost: lost)
            }
        } catch {
            pool.close()
            splitter.close()
            throw error
        }
    }

    /// The intake thread's life: start-up scan, READY, then inotify's events
    /// until `stop()` or until new/ or ctl/ is lost.
    private func follow(_ examiners: Examiners, ready: OneShot, lost: @escaping @Sendable (String) -> Void) {
        let routes = self.routes, watcher = self.watcher
        for route in routes { route.engine.post { $0.onInboxNeedsRescan { watcher.requestRescan() } } }
        var backlog = IntakeBacklog()
        // ctl/ after READY=1: a replay asked for while the daemon was stopped
        // copies up to the high-water mark with an fsync each, which could
        // outlast TimeoutStartSec=; systemd would kill the start and the
        // request, not yet removed, would run again at every restart.
        if let problem = scan(&backlog, examiners, controls: false, whenWaiting: ready.fire) {
            // `lost` first: the daemon then exits right after start-up.
            lost(problem)
            return ready.fire()
        }
        ready.fire()
        // A ctl/ that cannot be listed is left to a scan, which says why.
        let waiting = try? SystemCall.listDirectory(spool.layout.ctl)
        if let problem = waiting.map({ execute($0, &backlog, examiners) }) ?? scan(&backlog, examiners) {
            return lost(problem)
        }
        var rejected = RejectedCount()
        while true {
            let timeout = [backlog.nextWakeUp, rejected.due].compactMap { $0 }.min().map { max(.zero, $0 - clock.now) }
            defer { if rejected.listsNow(at: clock.now) { countRejected() } }
            for event in watcher.next(timeout: timeout) {
                switch event {
                case let .drops(names):
                    guard !backlog.isPaused, !backlog.awaitsRoom else {
                        // Taken by the scan once intake goes on, as any
                        // file: a writer that closed its file is done.
                        for name in names { backlog.writerClosed(name) }
                        continue
                    }
                    // A receipt's parts the splitter moved in (and handed over itself) are let go.
                    let names = names.filter { !examiners.splitter.releaseOwnPart($0) }
                    finish(take(names, settling: false, &backlog, examiners), fullScan: false, &backlog)
                case let .created(names):
                    // A regular file created in place is taken when its
                    // writer closes it, however long it pauses; one linked
                    // in (never written here) once it has settled; anything
                    // else at once. A name a scan deferred already (a file
                    // requeue-rejected linked back in) keeps its place.
                    // Paused or waiting for room, intake takes nothing, but
                    // still notes what is written in place: the scan made
                    // once it goes on must not take a writer's pause for a
                    // finished file and reject half of it.
                    let taking = !backlog.isPaused && !backlog.awaitsRoom
                    let now = clock.now
                    var others: [String] = []
                    for name in names where !backlog.isDeferred(name) && !examiners.splitter.releaseOwnPart(name) {
                        switch spool.creationInInbox(name) {
                        case .writtenHere?: backlog.deferFile(name, now: now, inPlace: true)
                        case .linkedIn?: backlog.deferFile(name, now: now)
                        case nil: others.append(name)
                        }
                    }
                    guard taking else { continue }
                    finish(take(others, settling: false, &backlog, examiners), fullScan: false, &backlog)
                case let .controls(names):
                    if let problem = execute(names, &backlog, examiners) { return lost(problem) }
                case .rejectedChanged:
                    rejected.noteChange()
                case .rescan:
                    // An overflow loses rejected/'s events as well as new/'s.
                    rejected.noteChange()
                    log.write(LogEntry(.info, "rescanning new/ and ctl/: inotify's event queue overflowed, "
                                       + "a drop was left in new/, rejected files were requeued, "
                                       + "or the engine has room again"))
                    examiners.splitter.forgetClaims()
                    if let problem = scan(&backlog, examiners) { return lost(problem) }
                case .timedOut:
                    let now = clock.now
                    // Taken off the backlog even while paused: the
                    // retry scan reads all of new/ anyway.
                    let due = backlog.dueFiles(now: now)
                    if backlog.isRetryDue(now: now) {
                        if let problem = scan(&backlog, examiners) { return lost(problem) }
                    } else if !backlog.isPaused, !backlog.awaitsRoom {
                        finish(take(due, settling: true, &backlog, examiners), fullScan: false, &backlog)
                    } else {
                        // Their writers may still be at work: looked at again later.
                        for name in due where backlog.isWrittenInPlace(name) {
                            backlog.deferFile(name, now: now, inPlace: true)
                        }
                    }
                case let .attributesChanged(directory):
                    if let problem = Intake.accessProblem(directory) { return lost(problem) }
                case let .lost(directory):
                    return lost("\(directory) disappeared or was moved away")
                case .stopped:
                    return
                }
            }
        }
    }

    func stop() { watcher.stop() }

    /// Lists rejected/ and posts its count to the first destination's engine,
    /// which publishes it. A listing that fails leaves the count as it was:
    /// the next item set aside fails the same way and says why.
    private func countRejected() {
        guard let count = try? spool.rejectedNames().count else { return }
        engine.post { $0.noteRejectedCount(count) }
    }

    /// Monotonic time for the backlog's deadlines.
    private let clock = SystemClock()

    /// Why `directory` cannot be used any more, or nil when it can.
    static func accessProblem(_ directory: String) -> String? {
        guard access(directory, R_OK | W_OK | X_OK) != 0 else { return nil }
        return "\(directory) is no longer readable and writable by txrecon (\(String(cString: strerror(errno)))); "
            + "give it back to the txrecon user (see systemd/txrecon.tmpfiles)"
    }

    /// Executes the requests `names` in ctl/; what `scan` returns when
    /// rejected files were requeued, else nil.
    private func execute(_ names: [String], _ backlog: inout IntakeBacklog, _ examiners: Examiners) -> String? {
        let (failures, requeued) = control.execute(names, maximumSize: maximumFileSize)
        finish(failures, fullScan: false, &backlog)
        // Requeued files are linked into new/, which raises no event intake
        // takes at once: read new/ again now.
        return requeued ? scan(&backlog, examiners) : nil
    }

    /// Executes ctl/ (unless `controls` is false) and takes everything in
    /// new/; records the outcome in the backlog. Returns a sentence for the
    /// operator when a directory cannot be listed at all (intake cannot go
    /// on), else nil.
    private func scan(_ backlog: inout IntakeBacklog, _ examiners: Examiners, controls: Bool = true,
                      whenWaiting: @escaping @Sendable () -> Void = {}) -> String? {
        // A split that failed counts as this scan's failure: lack of space
        // pauses intake for it as for any drop.
        var failures = examiners.splitter.takeFailures()
        backlog.awaitsRoom = false
        do throws(SpoolError) {
            if controls {
                let (executed, _) = control.execute(try SystemCall.listDirectory(spool.layout.ctl),
                                                    maximumSize: maximumFileSize)
                failures.count += executed.count
                failures.space = failures.space ?? executed.space
            }
            // Read a part, take it, read on: stops early when the engine is
            // full (the rest stays in new/ until it asks for the next scan).
            let inbox = try DirectoryReader(spool.layout.new)
            while !backlog.awaitsRoom {
                var (part, unaddressable) = try inbox.names(upTo: Intake.scanPart)
                if part.isEmpty && unaddressable.isEmpty { break }
                for bytes in unaddressable {
                    guard let renamed = try spool.renameUndecodableDrop(bytes) else { continue }
                    log.write(LogEntry(.warning, "new/\(LogText.escaped(renamed)): renamed from a name that is not "
                                       + "UTF-8, which txrecon cannot address", fields: [("TXRECON_FILE", renamed)]))
                    part.append(renamed)
                }
                let taken = take(part, settling: true, &backlog, examiners, whenWaiting: whenWaiting)
                failures.count += taken.count
                failures.space = failures.space ?? taken.space
            }
            // Then the destinations' copies left in their inboxes.
            if fansOut {
                let copies = takeCopies(via: examiners.senders, verifiers: examiners.verifiers, whenWaiting: whenWaiting)
                failures.count += copies.count
                failures.space = failures.space ?? copies.space
            }
        } catch where error.code == EACCES || error.code == ENOENT || error.code == ENOTDIR {
            return "cannot list \(error.path): \(String(cString: strerror(error.code))); the spool is not usable"
        } catch {
            log.write(LogEntry(.error, "\(error); scanning again shortly"))
            failures.count += 1
        }
        finish(failures, fullScan: true, &backlog)
        return nil
    }

    /// Logs and publishes a pause or a resumption.
    private func finish(_ failures: IntakeBacklog.Failures, fullScan: Bool, _ backlog: inout IntakeBacklog) {
        guard let transition = backlog.finished(failures, fullScan: fullScan, now: clock.now) else { return }
        switch transition {
        case let .paused(reason):
            log.write(LogEntry(.error, "intake paused: \(reason); new drops wait in new/ and are taken once "
                               + "the spool can be written again (free space in \(spool.layout.root))",
                               messageID: MessageID.intakePaused, fields: [("TXRECON_REASON", reason)]))
            engine.post { $0.noteIntakePaused(reason) }
        case let .resumed(after):
            log.write(LogEntry(.notice, "intake resumed after \(after.milliseconds / 1000)s paused",
                               messageID: MessageID.intakeResumed))
            engine.post { $0.noteIntakePaused(nil) }
        }
    }

    // MARK: new/

    /// Reads, decodes, verifies and hands over `names` in batches. With
    /// `settling`, files modified within IntakeBacklog.settleTime are
    /// deferred instead. Stops when the engine is full: the rest stays in
    /// new/ until the engine asks for a scan (`backlog.awaitsRoom`).
    private func take(_ names: [String], settling: Bool, _ backlog: inout IntakeBacklog, _ examiners: Examiners,
                      whenWaiting: @escaping @Sendable () -> Void = {}) -> IntakeBacklog.Failures {
        var failures = takeBatches(names, settling: settling, &backlog, examiners, whenWaiting: whenWaiting)
        settle(examiners.senders, &failures)
        return failures
    }

    /// `take`'s work, up to the last batch posted.
    private func takeBatches(_ names: [String], settling: Bool, _ backlog: inout IntakeBacklog, _ examiners: Examiners,
                             whenWaiting: @escaping @Sendable () -> Void) -> IntakeBacklog.Failures {
        let settings = self.settings.withLock { $0 }
        let decoder = InputDecoder(acceptEnvelopes: settings.acceptEnvelopes)
        let verifier = examiners.verifiers.verifier(for: settings.verification)
        let wall = Timestamp.nowMilliseconds()
        var failures = IntakeBacklog.Failures()
        var batch: [Drop] = []
        var rejected = 0
        var seen = Set<String>(minimumCapacity: names.count)
        let unique = names.filter { seen.insert($0).inserted }
        for start in stride(from: 0, to: unique.count, by: Intake.batchSize) {
            let part = unique[start..<min(start + Intake.batchSize, unique.count)]
            let examinations = examiners.pool.examine(part, in: spool, maximumSize: settings.maximumFileSize,
                                                      decoder: decoder, policy: settings.verification,
                                                      verifier: verifier, receipts: receipts)
            for (name, examination) in zip(part, examinations) {
                var window: Settling?
                if settling {
                    let settle = backlog.settleWindow(for: name).milliseconds
                    window = Settling(recent: (wall - settle)...(wall + settle), inPlace: backlog.isWrittenInPlace(name))
                }
                backlog.forget(name)
                batch += act(on: examination, of: name, decoder: decoder, verifier: verifier, settings: settings,
                             settling: window, examiners: examiners, rejected: &rejected, failures: &failures,
                             backlog: &backlog)
                // A batch at a time, also of the thousands of parts one
                // receipt can make: the engine takes a batch once its inbox
                // window has room for all of it.
                while batch.count >= Intake.batchSize {
                    let full = hand(Array(batch.prefix(Intake.batchSize)), via: examiners.senders, rejected: rejected,
                                    failures: &failures, whenWaiting: whenWaiting)
                    batch.removeFirst(Intake.batchSize)
                    rejected = 0
                    // What was examined but not handed over is still in new/.
                    if full { return leaveRestInInbox(failures, &backlog) }
                    executeWaitingRequests(&failures)
                }
            }
        }
        if !batch.isEmpty || rejected > 0,
           hand(batch, via: examiners.senders, rejected: rejected, failures: &failures, whenWaiting: whenWaiting) {
            return leaveRestInInbox(failures, &backlog)
        }
        return failures
    }

    /// Executes the requests waiting in ctl/ after a whole batch of drops:
    /// the scan of a backlog of a million drops, or a burst inotify reports
    /// at once, hands over thousands of batches before this thread reads
    /// inotify's events again, and an operator's request must not wait for
    /// all of them. One listing of ctl/ (empty but for answers, as a rule)
    /// per batch of 256; a smaller take ends soon and leaves them to the
    /// events. A listing that fails is left to the next scan,
    /// which reports it; rejected files requeued into new/ are read by a
    /// rescan, asked for here, not by a scan inside this one.
    private func executeWaitingRequests(_ failures: inout IntakeBacklog.Failures) {
        guard let names = try? SystemCall.listDirectory(spool.layout.ctl),
              names.contains(where: { !$0.hasPrefix(".") && !$0.hasSuffix(".result") }) else { return }
        let (executed, requeued) = control.execute(names, maximumSize: maximumFileSize)
        failures.count += executed.count
        failures.space = failures.space ?? executed.space
        if requeued { watcher.requestRescan() }
    }

    /// The engine is full: drops wait in new/ until it asks for a scan.
    private func leaveRestInInbox(_ failures: IntakeBacklog.Failures,
                                  _ backlog: inout IntakeBacklog) -> IntakeBacklog.Failures {
        backlog.awaitsRoom = true
        log.write(LogEntry(.notice, "intake waits: too many items are pending; further drops wait in new/ "
                           + "and are read once deliveries have made room (ctl/ requests are still executed)"))
        return failures
    }

    /// The drops one examined file yields: none (gone, rejected, deferred,
    /// failed), one, or one per transaction of a history page.
    /// When a drop that does not decode is left for later: modified within
    /// `recent` (wall ms); `inPlace`: seen created in new/, its writer has
    /// not closed it.
    private struct Settling {
        var recent: ClosedRange<Int64>
        var inPlace: Bool
    }

    private func act(on examination: DropExamination, of name: String, decoder: InputDecoder,
                     verifier: SignedDataVerifier?, settings: Settings, settling: Settling?,
                     examiners: Examiners, rejected: inout Int, failures: inout IntakeBacklog.Failures,
                     backlog: inout IntakeBacklog) -> [Drop] {
        do throws(SpoolError) {
            switch examination {
            case .gone:
                return []
            case let .failed(error):
                throw error
            case let .refused(rejection):
                try reject(name, rejection, rejected: &rejected)
                return []
            case let .undecodable(rejection, modifiedAt):
                // Found by a scan and written moments ago (or seen created
                // in place, and changed within the last hour), it may be a
                // file still being written in place: look again later
                // rather than reject half a file. A complete one (the normal
                // case, even in a burst) is taken at once.
                if let settling, settling.recent.contains(modifiedAt) {
                    backlog.deferFile(name, now: clock.now, inPlace: settling.inPlace)
                    return []
                }
                try reject(name, rejection, rejected: &rejected)
                return []
            case let .decoded(.item(item), modifiedAt, novelties, _):
                if !novelties.isEmpty { report(novelties, in: item, file: name) }
                return [Drop(name: name, item: item, receivedAt: modifiedAt)]
            case let .decoded(.page(parts), modifiedAt, _, file):
                return try split(name, file, "history page", into: parts, modifiedAt: modifiedAt, decoder: decoder,
                                 verifier: verifier, settings: settings, examiners: examiners, rejected: &rejected,
                                 failures: &failures, backlog: &backlog)
            case let .decoded(.receipt(receipt), modifiedAt, _, file):
                // Stored and split on the splitter's thread, which hands its
                // parts over itself: its thousands of files must not hold up
                // the drops behind it. Without room there, it waits in new/.
                try examiners.uploads.take(name, receipt, modifiedAt: modifiedAt, file: file, settings: settings,
                                           splitter: examiners.splitter)
                return []
            }
        } catch {
            note(error, name: name, failures: &failures)
            return []
        }
    }

    /// Replaces the drop `name` (`file`, written at `modifiedAt`) with
    /// `parts`, a drop each, and takes them. It is set aside first, so that
    /// its removal can only ever remove the file examined.
    private func split(_ name: String, _ file: WrittenFile, _ what: String, into parts: [String], modifiedAt: Int64,
                       decoder: InputDecoder, verifier: SignedDataVerifier?, settings: Settings, examiners: Examiners,
                       rejected: inout Int, failures: inout IntakeBacklog.Failures,
                       backlog: inout IntakeBacklog) throws(SpoolError) -> [Drop] {
        guard let aside = try spool.setAside(drop: name, file: file) else { return [] }
        let names: [String]
        do {
            names = try spool.split(drop: aside, into: parts.map { Array($0.utf8) }, modifiedAt: modifiedAt)
        } catch {
            // Back where the next scan tries it again.
            try? spool.putBack(aside) // ignored: restoreAsideDrops puts it back at the next start
            throw error
        }
        log.write(LogEntry(.info, "new/\(LogText.escaped(name)): \(what) split into \(names.count) drops",
                           fields: [("TXRECON_FILE", name)]))
        return names.flatMap { part in
            let examination = DropExamination.examine(part, in: spool, maximumSize: settings.maximumFileSize,
                                                      decoder: decoder, verifier: verifier, receipts: receipts)
            return act(on: examination, of: part, decoder: decoder, verifier: verifier, settings: settings,
                       settling: nil, examiners: examiners, rejected: &rejected, failures: &failures, backlog: &backlog)
        }
    }

    /// What each destination's engine has pending for `keys`, by name:
    /// what a receipt's split need not write again.
    private func pendingVersions(of keys: [ItemKey]) -> [String: [ItemKey: ItemVersion]] {
        let routes = self.routes
        return waitFor {
            var versions: [String: [ItemKey: ItemVersion]] = [:]
            for route in routes { versions[route.name] = await route.engine.pendingVersions(of: keys) }
            return versions
        }
    }

    /// Counts a drop the spool could not take; it stays in new/ and the
    /// next scan tries it again. Lack of space is reported once, as the
    /// pause, rather than once per file.
    func note(_ error: SpoolError, name: String, failures: inout IntakeBacklog.Failures) {
        if !IntakeBacklog.isLackOfSpace(error) {
            log.write(LogEntry(.error, "new/\(LogText.escaped(name)) not taken: \(error); it stays in new/ "
                               + "and is tried again shortly", fields: [("TXRECON_FILE", name)]))
        }
        failures.record(error)
    }

    /// A verified notification carries names this release does not know:
    /// it is delivered all the same (the forward-compatibility rule of
    /// docs/input-formats.md "Notifications, whatever Apple adds"); each
    /// name is warned about once, so that the operator learns Apple added
    /// something, and counted in the metrics every time (by `[Backend]`'s
    /// engine, as rejections are).
    /// Rare: Apple adds a name a few times a year.
    private func report(_ novelties: [AppleNovelty], in item: Item, file: String) {
        let first = reportedNovelties.withLock { reported in novelties.filter { reported.insert($0).inserted } }
        for novelty in first {
            log.write(LogEntry(.warning, "\(item.key): a verified notification (\(item.fields.notificationType ?? "?")) "
                               + "carries the \(novelty.what) \(LogText.escaped(novelty.name)), which this release "
                               + "of txrecon does not know (Apple added it since); it is delivered as Apple signed it, "
                               + "its signed members verified. Said once per name; upgrade txrecon to read it",
                               messageID: MessageID.unknownAppleName,
                               fields: [("TXRECON_ID", item.key.rawValue), ("TXRECON_FILE", file),
                                        ("TXRECON_UNKNOWN", novelty.what + " " + novelty.name)]))
        }
        engine.post { $0.noteNovelties(novelties) }
    }

    /// `app`: the app of a verified drop rejected all the same, for the journal.
    func reject(_ name: String, _ rejection: Rejection, app: String? = nil, rejected: inout Int) throws(SpoolError) {
        let movedTo = try spool.reject(drop: name, because: rejection, at: Timestamp.nowMilliseconds())
        events.rejected(file: name, rejection: rejection, movedTo: movedTo, app: app)
        rejected += 1
    }

    /// Rejects a verified drop no destination's [Match] takes, under its
    /// app's name.
    func rejectUnrouted(_ drop: Drop, apps: AppDirectory, rejected: inout Int) throws(SpoolError) {
        try reject(drop.name, Intake.noDestination(drop.item), app: apps.name(of: drop.item), rejected: &rejected)
    }

    /// Hands `drops` to the engine (or, with several destinations, to each
    /// whose match takes it) through the calling thread's `senders`, one
    /// per route; returns whether an engine is full.
    private func hand(_ drops: [Drop], via senders: [IntakeHandOff], rejected: Int,
                      failures: inout IntakeBacklog.Failures, whenWaiting: @escaping @Sendable () -> Void) -> Bool {
        if fansOut {
            return fanOut(drops, via: senders, rejected: rejected, failures: &failures, whenWaiting: whenWaiting)
        }
        // One destination: its [Match] still narrows what it gets.
        let (match, apps) = settings.withLock { ($0.matches[0], $0.apps) }
        var rejected = rejected
        var drops = drops
        drops.removeAll { drop in
            guard !match.accepts(drop.item) else { return false }
            do throws(SpoolError) {
                try rejectUnrouted(drop, apps: apps, rejected: &rejected)
            } catch {
                note(error, name: drop.name, failures: &failures)
            }
            return true
        }
        let primary = routes[0].name
        for index in drops.indices { drops[index].confirmed = confirmedVersion(primary, drops[index].item.key) }
        let count = rejected
        let bulk = !drops.isEmpty && drops.allSatisfy(\.bulk)
        if count > 0 { engine.post { $0.noteRejected(count: count) } }
        guard !drops.isEmpty else { return false }
        let offered = senders[0].offer(drops, waitsForWindow: !bulk, whenWaiting: whenWaiting)
        noteRefused(offered.refused, route: 0, failures: &failures)
        return offered.full
    }

    /// Waits until each engine has taken what `senders` posted, and notes
    /// what it could not take.
    func settle(_ senders: [IntakeHandOff], _ failures: inout IntakeBacklog.Failures) {
        for (index, sender) in senders.enumerated() {
            noteRefused(sender.settle(), route: index, failures: &failures)
        }
    }

    /// Drops (copies, with several destinations) route `index`'s engine
    /// could not take: they stay where they are and are tried again.
    func noteRefused(_ refused: [(name: String, error: SpoolError)], route index: Int,
                     failures: inout IntakeBacklog.Failures) {
        guard fansOut else {
            for (name, error) in refused { note(error, name: name, failures: &failures) }
            return
        }
        let route = routes[index]
        for (name, error) in refused {
            log.write(LogEntry(.error, "\(route.spool.layout.relative(nil))/\(LogText.escaped(name)) not taken: "
                               + "\(error); it stays there and is tried again shortly",
                               fields: [("TXRECON_FILE", name), ("TXRECON_DESTINATION", route.name)]))
            failures.record(error)
        }
    }

    /// Runs async work and blocks this (dedicated) thread until it is done.
    /// The task starts on the engine's thread, where its work goes anyway,
    /// not on the global executor (see ThreadExecutor).
    func waitFor<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        routes[0].engine.executor.runBlocking(work)
    }
}

/// What the intake thread examines drops with: the helpers, and its own
/// verifier for the part it examines itself. Made on the intake thread and
/// used only there.
private struct Examiners {
    let pool: ExaminerPool
    let uploads: ReceiptUploads
    let splitter: ReceiptSplitter
    /// This thread's links to the engines, one per route.
    let senders: [IntakeHandOff]
    let verifiers = VerifierSlot()
}
