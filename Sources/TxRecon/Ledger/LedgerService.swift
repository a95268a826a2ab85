// LedgerService: the daemon's ledger (Ledger, in SQLite): one thread that
// writes what the engines report confirmed, in batches and off their
// threads; a connection of its own for intake's supersede look-ups; the
// catch-up from done/ at start; LedgerRetention=; and the watermark that
// tells DoneReaper which delivered snapshots the ledger durably covers.
//
// The ordering (docs/crash-consistency.md, "The ledger"): an item is
// finished by its rename into done/ (the commit point, as before); the
// engine then hands its confirmation here, and the writer commits it
// (synchronous=FULL), then the catch-up mark (a crash between the two
// leaves the older mark, which only reads more at the next start). A
// crash loses at most the confirmations not yet committed, never claims
// one: the next start reads the delivered snapshots in done/ changed since
// the mark and records them. DoneReaper removes a delivered snapshot only
// once it changed before `durableThrough`, so whatever the ledger lost is
// still in done/ to be caught up.
//
// A ledger that cannot be written (locked by another process, its disk
// full) or opened costs its history, never a delivery: look-ups answer
// from the file as it is while it can be read, else "not known" (the
// supersede rule then reads done/ as before); confirmations wait in memory
// up to `pendingLimit` (beyond, the oldest are let go: done/ still holds
// them, and the catch-up records them once the ledger is back); the writer
// tries again every `retryInterval`; and the reaper removes nothing until
// that catch-up is done. A damaged file (found at open, or by a write or
// read later: a broken page shows only when it is read) is set aside and
// the ledger rebuilt from done/, losing only what is older than
// DoneRetention=.
// Reports: an error entry when the ledger fails or is rebuilt, a notice
// when it is back; its path, rows, size and lag in `status`.
import Dispatch
import Glibc
import Synchronization

final class LedgerService: Sendable {
    struct Settings: Sendable {
        /// `LedgerFile=`.
        var path: String
        /// `LedgerRetention=`: a key whose last confirmation is older is forgotten.
        var retention: Duration
        /// Each destination's name and spool, for the catch-up from done/.
        var destinations: [(name: String, spool: Spool)]
        /// How done/'s files are read and verified (as the supersede rule
        /// reads them), at start; a reload's replace it (`reconfigure`).
        var reader: StoredItemReader
        /// Items read from done/ larger than this are skipped (MaxFileSize=), at start.
        var maximumFileSize: Int
        /// `LedgerService.batchInterval`; tests lengthen it.
        var batchInterval: Duration = LedgerService.batchInterval
        /// `LedgerService.retryInterval`; tests shorten it.
        var retryInterval: Duration = LedgerService.retryInterval
        /// The least room a key filter is built with; tests make it small.
        var keyFilterCapacity = 1 << 20
    }

    /// The ledger as status, check-config and the metrics show it.
    struct Status: Sendable, Equatable {
        var path: String
        var rows: Int64?
        var bytes: Int64?
        /// How long the oldest confirmation not yet durable in the ledger
        /// has waited, ms; 0 when every one is.
        var lagMilliseconds: Int64 = 0
        /// Confirmations waiting to be written.
        var pending = 0
        /// Why the ledger is not in use now; nil while it is.
        var unavailable: String?
        /// The start-up catch-up from done/ has not finished.
        var catchingUp = false
    }

    /// How long a failed ledger waits before it is tried again.
    static let retryInterval: Duration = .seconds(60)
    /// The least time between two batches while confirmations keep coming
    /// (the first after a quiet spell is written at once). Each commit is
    /// an fsync and, in the WAL, a copy of every page the batch changed:
    /// keys arrive in no order (notifications are keyed by a random UUID,
    /// a backlog by new/'s hash order), so a batch of a few hundred rows
    /// rewrites nearly a page per row, and a larger batch shares the pages
    /// (bench/FINDINGS.md, "The ledger's batches"). While it gathers, a
    /// crash loses that much of the ledger, which the catch-up reads back
    /// from done/.
    static let batchInterval: Duration = .seconds(1)
    /// A batch this large is written without waiting out the interval: a
    /// drain's batches stay at about this size, and so does the memory
    /// they take while gathering (about 300 bytes a confirmation, twice
    /// while a batch is written). Below it a drain's batches rewrite more
    /// pages per row (bench/FINDINGS.md, "The ledger's batches").
    static let batchLimit = 4_096
    /// done/ files changed this long before the catch-up mark are read
    /// again at start: the wall clock may have been stepped back a little.
    static let catchUpMargin: Int64 = 60_000
    /// Confirmations kept in memory while the ledger cannot take them
    /// (about 300 bytes each); beyond, the oldest are let go, and done/,
    /// which DoneReaper keeps until the watermark passes, is read for them.
    static let pendingLimit = 10_000

    /// What the writer thread is doing, so that the callers wake it only
    /// when it waits for what they bring.
    private enum WriterPhase {
        /// Writing, or about to: it looks at what is pending before it waits.
        case working
        /// Letting a batch gather until `batchInterval` has passed since
        /// the last one: a full batch, a flush or stop ends it early.
        case gathering
        /// Nothing pending: the next confirmation or flush wakes it.
        case idle
    }

    private struct State {
        /// Confirmations waiting for the writer, each as its row will be:
        /// the item's identity, not the item, whose signed strings and
        /// payload (kilobytes) would stay in memory as long as it waits,
        /// nor all its decoded fields.
        var pending: [LedgerRecord] = []
        /// The earliest confirmation let go unwritten (ms since 1970): the
        /// marks stay before it, and a catch-up from done/ records it.
        var lostSince: Int64?
        var writer = WriterPhase.working
        /// A flush waits for what was reported before it: the writer does
        /// not let the next batch gather (cleared when a batch is taken).
        var flushRequested = false
        var stopping = false
        /// The writer thread has ended (after `stop`): nothing more is
        /// written, and a flush has nothing to wait for.
        var ended = false
        var status: Status
        /// Every delivered snapshot in done/ that changed before this (ms
        /// since 1970) is durable in the ledger; 0 until the start-up
        /// catch-up is done. Set from the last write's mark, never kept
        /// above it: the wall clock may have been stepped back since.
        var durableThrough: Int64 = 0
        /// The earliest confirmation of the batch being written, until it
        /// is committed or put back into `pending`.
        var writing: Int64?
        var prunedAt: Int64 = 0
        /// The damage a write or read found in the open ledger (a broken
        /// page shows only when it is read): the next open sets the file
        /// aside and rebuilds, as one found at open is.
        var damage: LedgerError?
        /// Catch-ups since the last that succeeded that failed on a
        /// delivered snapshot that could not be read just now, by its path
        /// (the first such of a catch-up ends it). At most one path a
        /// catch-up; cleared when one succeeds.
        var readFailures: [String: Int] = [:]
    }

    let settings: Settings
    private let log: any LogSink
    /// The wall clock (ms since 1970), as done/'s change times are dated.
    private let now: @Sendable () -> Int64
    /// Told the status when it changes: opened, failed, caught up, counted.
    private let observe: @Sendable (Status) -> Void
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Callers of `flush`, woken after each round of the writer.
    private let rounds = Mutex<[DispatchSemaphore]>([])
    /// Intake's look-ups, on a connection of their own, which answers while
    /// the writer cannot write (a lock, a full disk); closed when the file
    /// is set aside to be rebuilt.
    private let lookups: LedgerLookups
    /// How the catch-up reads done/ (`Settings.reader` and
    /// `maximumFileSize` at start, then each reload's).
    private let reading: Mutex<(reader: StoredItemReader, maximumFileSize: Int)>
    /// What the ledger may hold, so that a look-up of a key it never
    /// recorded asks no SQLite; nil while the ledger is unavailable.
    private let keys = Mutex<LedgerKeyFilter?>(nil)

    init(settings: Settings, log: any LogSink, observe: @escaping @Sendable (Status) -> Void = { _ in },
         now: @escaping @Sendable () -> Int64 = { Timestamp.nowMilliseconds() }) {
        self.settings = settings
        self.log = log
        self.now = now
        self.observe = observe
        lookups = LedgerLookups(path: settings.path, log: log, now: now)
        reading = Mutex((settings.reader, settings.maximumFileSize))
        state = Mutex(State(status: Status(path: settings.path)))
        lookups.onDamage { [weak self] error, file in self?.lookupsFoundDamage(error, in: file) }
    }

    /// Opens the ledger (rebuilding a damaged one), starts the writer,
    /// which first catches up from done/. Returns at once: nothing here
    /// holds up READY.
    func start() throws(ThreadStartError) {
        state.withLock { $0.status.catchingUp = true }
        do {
            try DedicatedThread.start(name: "txrecon-ledger") { [self] in
                run()
                ended()
            }
        } catch {
            // No writer: flush and stop have nothing to wait for.
            ended()
            throw error
        }
    }

    /// A reload's way of reading done/: the catch-up then verifies as the
    /// engines do (an app added, a root changed, MaxFileSize= raised).
    func reconfigure(reader: StoredItemReader, maximumFileSize: Int) {
        reading.withLock { $0 = (reader, maximumFileSize) }
    }

    /// Writes what is pending, then ends the writer (a clean stop leaves
    /// nothing for the next start to catch up).
    func stop() {
        let running = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.stopping = true
            return true
        }
        guard running else { return }
        wake.signal()
        finished.wait()
    }

    // MARK: For the engines and intake

    /// `destination` confirmed `item` on `attempt` at `at` (ms since 1970),
    /// and it is in done/. Never blocks: the writer takes it.
    func record(destination: String, item: Item, attempt: Int, confirmation: Confirmation, at: Int64) {
        let record = LedgerRecord(destination: destination, key: item.key, version: item.version, confirmedAt: at,
                                  attempt: attempt, confirmation: confirmation.description, kind: item.kind,
                                  identity: LedgerRecord.Identity(item.fields))
        let signal = state.withLock { state -> Bool in
            if state.pending.count >= Self.pendingLimit {
                let letGo = state.pending.prefix(state.pending.count / 10)
                state.lostSince = min(state.lostSince ?? .max, letGo.map(\.confirmedAt).min() ?? at)
                state.pending.removeFirst(letGo.count)
            }
            state.pending.append(record)
            switch state.writer {
            case .working: return false
            case .gathering: guard state.pending.count >= Self.batchLimit else { return false }
            case .idle: break
            }
            state.writer = .working
            return true
        }
        if signal { wake.signal() }
    }

    /// The last version `destination` confirmed for `key`, as far as the
    /// ledger knows; nil when it does not, or cannot say now.
    func confirmedVersion(at destination: String, of key: ItemKey) -> ItemVersion? {
        if let filter = keys.withLock({ $0 }), !filter.mayHold(destination: destination, key: key) { return nil }
        return lookups.confirmedVersion(at: destination, of: key)
    }

    /// Returns once everything reported before the call is committed and
    /// the start-up catch-up is done; at once while the ledger is
    /// unavailable or stopped (there is nothing to wait for). Cuts a
    /// batch's gathering short. For tests, which read the ledger right
    /// after a delivery; blocks the caller.
    func flush() {
        while true {
            let round = DispatchSemaphore(value: 0)
            // Listed before the look below: a writer that ends or finishes
            // a round after it wakes this one.
            rounds.withLock { $0.append(round) }
            let signal = state.withLock { state -> Bool? in
                if state.ended || state.status.unavailable != nil
                    || (state.pending.isEmpty && !state.status.catchingUp && state.writer == .idle) {
                    // Nothing left to cut short: a request made by an
                    // earlier look of this loop, while the writer was
                    // finishing its round, would have the next batch
                    // written at its first confirmation.
                    state.flushRequested = false
                    return nil
                }
                state.flushRequested = true
                guard state.writer != .working else { return false }
                state.writer = .working
                return true
            }
            guard let signal else {
                rounds.withLock { $0.removeAll { $0 === round } }
                return
            }
            if signal { wake.signal() }
            round.wait()
        }
    }

    /// Every delivered snapshot that changed in done/ before this (ms since
    /// 1970) is durable in the ledger: DoneReaper may remove it. Below every
    /// confirmation not committed yet (waiting, being written, or let go),
    /// whatever the clock did since the last write set the watermark: after
    /// a step back, deliveries are dated before it. Reads the waiting ones
    /// (at most `pendingLimit`): once per reaper scan.
    var durableThrough: Int64 {
        state.withLock { state in
            let uncommitted = min(state.pending.lazy.map(\.confirmedAt).min() ?? .max, state.writing ?? .max,
                                  state.lostSince ?? .max)
            guard uncommitted != .max else { return state.durableThrough }
            return min(state.durableThrough, uncommitted - Self.catchUpMargin)
        }
    }

    var status: Status { state.withLock { $0.status } }

    /// Waits until look-ups of keys the ledger never recorded skip SQLite
    /// (the key filter's build is done), at most `timeout`; whether they do.
    func waitForKeyFilter(timeout: Duration) -> Bool {
        keys.withLock { $0 }?.waitUntilReady(timeout: timeout) ?? false
    }

    // MARK: The writer

    private func run() {
        var ledger: SQLiteLedger?
        /// The file `ledger` opened, as its path named it then, and its
        /// write-ahead log as the last round found it.
        var opened: FileIdentity?
        var openedLog: FileIdentity?
        var started = false
        var committed = ContinuousClock.now - settings.batchInterval
        // Damage found in an open ledger is rebuilt without waiting out the
        // retry interval (waiting changes nothing), once in a row.
        var rebuildsAtOnce = true
        while true {
            if ledger == nil {
                let missing = !started && access(settings.path, F_OK) != 0
                ledger = open()
                opened = Self.identity(of: settings.path)
                if ledger != nil {
                    if missing { reportMadeAnew() }
                    started = true
                }
                // Created, migrated or rebuilt: look-ups may read it now.
                lookups.writerOpened()
                if ledger != nil { rebuildsAtOnce = true }
            }
            if ledger != nil {
                // Busy: let the next batch gather.
                let next = committed + settings.batchInterval
                let gathers = next > .now && state.withLock { state -> Bool in
                    guard !state.stopping, !state.flushRequested, state.pending.count < Self.batchLimit else {
                        return false
                    }
                    state.writer = .gathering
                    return true
                }
                if gathers {
                    _ = wake.wait(timeout: .now() + .milliseconds(Int((next - .now).milliseconds) + 1))
                    state.withLock { $0.writer = .working }
                }
                committed = .now
            }
            if ledger != nil, let change = changeUnderneath(opened) {
                // Checked before every round's writes: one batch committed
                // into a removed file would move the watermark past
                // deliveries that only that file holds.
                ledger = nil
                lost(change)
                if !change.isCorruption { setAsideLog(openedLog) }
                ledger = open()
                opened = Self.identity(of: settings.path)
            } else if ledger != nil {
                openedLog = Self.identity(of: settings.path + "-wal") ?? openedLog
            }
            if let current = ledger {
                do {
                    try catchUpIfNeeded(current)
                    try writePending(current)
                    try maintain(current)
                } catch {
                    fail(error)
                    ledger = nil
                }
            }
            endRound()
            let (stop, nothingToDo) = state.withLock { state -> (Bool, Bool) in
                (state.stopping, state.pending.isEmpty)
            }
            if stop, ledger == nil || nothingToDo { break }
            if ledger == nil {
                if rebuildsAtOnce, state.withLock({ $0.damage != nil }) {
                    rebuildsAtOnce = false
                    continue
                }
                // Unavailable: try again after a while, or when stopping.
                _ = wake.wait(timeout: .now() + .milliseconds(Int(settings.retryInterval.milliseconds)))
                continue
            }
            let idle = state.withLock { state -> Bool in
                guard state.pending.isEmpty, !state.stopping else { return false }
                state.writer = .idle
                return true
            }
            if idle {
                // The status shows the writer's backlog as the engines last
                // published it; once they go quiet nothing else would tell
                // it that the backlog is written (`txrecon status` showed
                // "pending" for good after a drain).
                observe(status)
                // A flush that found the writer busy waits for this.
                endRound()
                wake.wait()
            }
        }
        lookups.close()
        endRound()
    }

    /// The writer is gone (or never started): wakes a flush that began as
    /// it ended, and `stop`.
    private func ended() {
        lookups.writerOpened()
        state.withLock { $0.ended = true }
        endRound()
        finished.signal()
    }

    /// Wakes the callers of `flush` waiting for the writer's round to end.
    private func endRound() {
        for waiter in rounds.withLock({ waiters in defer { waiters.removeAll() }; return waiters }) { waiter.signal() }
    }

    /// Why the ledger open since `opened` is no longer the one to write:
    /// the file at its path was removed or replaced (an operator freeing
    /// space, a restore from a backup; SQLite goes on writing the removed
    /// inode, and the look-ups go on reading it), or the look-ups found it
    /// damaged. nil while it is the one.
    private func changeUnderneath(_ opened: FileIdentity?) -> LedgerError? {
        if let damage = state.withLock({ $0.damage }) { return damage }
        let current: FileIdentity?
        do {
            current = try FileIdentity.of(settings.path)
        } catch {
            return nil  // Cannot tell (EACCES, EIO): the next round looks again.
        }
        guard current != opened else { return nil }
        return LedgerError(operation: "write", path: settings.path, code: 0, message: current == nil
            ? "the file was removed while txrecon had it open"
            : "the file was replaced while txrecon had it open")
    }

    /// Moves aside the write-ahead log of the ledger given up on, `log`,
    /// when it is still at the path, with its index: SQLite leaves both
    /// there once the database is removed, and the database opened next at
    /// the path would read that log's pages as its own. Kept, as a damaged
    /// file's is, for a person to look at.
    private func setAsideLog(_ log: FileIdentity?) {
        guard let log, Self.identity(of: settings.path + "-wal") == log else { return }
        rename(settings.path + "-wal", settings.path + ".replaced-\(Timestamp.nowMilliseconds())-wal")
        unlink(settings.path + "-shm")
    }

    /// The ledger open until now is given up for `change`: look-ups and
    /// the key filter leave it, and the reaper waits for the catch-up from
    /// done/ into the ledger opened next (a damaged one is set aside and
    /// rebuilt; a removed one made again; a replacement read from its own
    /// mark), which the same round does.
    private func lost(_ change: LedgerError) {
        keys.withLock { $0 = nil }
        lookups.close()
        state.withLock { state in
            state.status.catchingUp = true
            state.durableThrough = 0
        }
        guard !change.isCorruption else { return }  // rebuild() says so
        log.write(LogEntry(.error, "the ledger \(settings.path): \(change.message); it is opened again (made again "
                           + "when missing) and caught up from done/: what each destination confirmed longer ago "
                           + "than DoneRetention= is lost unless the file there now holds it",
                           fields: [("TXRECON_REASON", change.message)]))
    }

    /// The ledger file was missing at start and is made anew: an error
    /// when a destination's done/ holds deliveries, which says the file
    /// existed before (removed while txrecon was stopped, or LedgerFile=
    /// changed), unless this is the first start of a release with a ledger.
    private func reportMadeAnew() {
        let delivered = settings.destinations.contains { _, spool in
            var any = false
            try? DirectoryReader(spool.layout.done).read { name in
                any = !name.starts(with: [UInt8(ascii: ".")])
                return !any
            }
            return any
        }
        guard delivered else { return }
        log.write(LogEntry(.error, "the ledger \(settings.path) did not exist and was made anew, then filled from "
                           + "done/: if it existed before (removed while txrecon was stopped, or LedgerFile= "
                           + "changed), what each destination confirmed longer ago than DoneRetention= is lost. At "
                           + "the first start after an upgrade from a release without a ledger, nothing is"))
    }

    /// The identity of the file at `path`; nil when there is none or it
    /// cannot be told.
    private static func identity(of path: String) -> FileIdentity? {
        (try? FileIdentity.of(path)) ?? nil
    }

    /// The look-ups found the open ledger damaged (a broken page the writer
    /// never reads): the writer's next round sets it aside and rebuilds,
    /// as it does damage it finds itself. `file` is the one found damaged:
    /// a report that arrives once the writer has rebuilt (the path names
    /// another file) is not the new file's.
    private func lookupsFoundDamage(_ error: LedgerError, in file: FileIdentity?) {
        guard let file, file == Self.identity(of: settings.path) else { return }
        let signal = state.withLock { state -> Bool in
            guard state.damage == nil, !state.stopping else { return false }
            state.damage = error
            guard state.writer != .working else { return false }
            state.writer = .working
            return true
        }
        if signal { wake.signal() }
    }

    /// The ledger, opened or rebuilt; nil (and logged) when it cannot be.
    private func open() -> SQLiteLedger? {
        do {
            let ledger = try openOrRebuild()
            lookups.open()
            let wasUnavailable = state.withLock { state -> String? in
                defer { state.status.unavailable = nil }
                return state.status.unavailable
            }
            if let reason = wasUnavailable {
                log.write(LogEntry(.notice, "the ledger \(settings.path) is in use again (it was not: \(reason)); "
                                   + "what was confirmed meanwhile is caught up from done/"))
            }
            try refreshStatus(ledger)
            buildKeyFilter(holding: Int(state.withLock { $0.status.rows } ?? 0))
            return ledger
        } catch {
            fail(error)
            return nil
        }
    }

    private func openOrRebuild() throws(LedgerError) -> SQLiteLedger {
        try makeDirectory()
        if let damage = state.withLock({ $0.damage }) { return try rebuild(damagedBy: damage) }
        do {
            return try SQLiteLedger(path: settings.path, cache: .writer)
        } catch where error.isCorruption {
            return try rebuild(damagedBy: error)
        }
    }

    /// Sets the damaged file aside with its WAL (whose frames are its
    /// newest commits, for a person to look at) and opens a new, empty
    /// ledger, which the catch-up fills from done/.
    private func rebuild(damagedBy error: LedgerError) throws(LedgerError) -> SQLiteLedger {
        lookups.close()
        let aside = settings.path + ".damaged-\(Timestamp.nowMilliseconds())"
        rename(settings.path, aside)
        rename(settings.path + "-wal", aside + "-wal")
        unlink(settings.path + "-shm")
        state.withLock { $0.damage = nil }
        log.write(LogEntry(.error, "the ledger \(settings.path) is damaged (\(error.message)); it was moved to "
                           + "\(aside) and is rebuilt from done/: what each destination confirmed longer ago "
                           + "than DoneRetention= is lost (txrecon history and show forget it, and a snapshot "
                           + "older than one confirmed then is no longer recognised as such)"))
        return try SQLiteLedger(path: settings.path, cache: .writer)
    }

    /// The ledger's directory, made 0700 when missing (/var/lib/txrecon is
    /// systemd's StateDirectory=; elsewhere the daemon makes it).
    private func makeDirectory() throws(LedgerError) {
        let directory = String(settings.path[..<(settings.path.lastIndex(of: "/") ?? settings.path.startIndex)])
        guard !directory.isEmpty, access(directory, F_OK) != 0 else { return }
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
            throw LedgerError(operation: "create the directory of", path: settings.path, code: 0,
                              message: String(cString: strerror(errno)))
        }
    }

    private func fail(_ error: LedgerError) {
        keys.withLock { $0 = nil }
        let first = state.withLock { state -> Bool in
            defer {
                state.status.unavailable = error.message
                // Whatever the engines report meanwhile is read from done/
                // once the ledger is back.
                state.status.catchingUp = true
                // The reaper waits for that catch-up: the ledger then open
                // may be a new one (rebuilt, or made again where the file
                // was removed), which holds nothing the old one covered.
                state.durableThrough = 0
                if error.isCorruption { state.damage = error }
            }
            return state.status.unavailable == nil
        }
        observe(status)
        guard first else { return }
        let what = error.isBusy ? "another process holds a lock on it (an open sqlite3 shell?)"
            : error.isFull ? "its file system is full" : "\(error.message)"
        log.write(LogEntry(.error, "the ledger \(settings.path) cannot be used: \(what). Delivery goes on: "
                           + "confirmations wait in memory, done/ stays the record of deliveries (nothing is "
                           + "removed from it that the ledger does not hold), and txrecon tries again every "
                           + "\(settings.retryInterval.components.seconds) s",
                           fields: [("TXRECON_REASON", error.message)]))
    }

    /// Takes what the engines reported and commits it with the new mark.
    private func writePending(_ ledger: SQLiteLedger) throws(LedgerError) {
        let (records, lostSince) = state.withLock { state -> ([LedgerRecord], Int64?) in
            defer {
                state.writing = state.pending.lazy.map(\.confirmedAt).min()
                state.pending.removeAll(keepingCapacity: true)
                state.flushRequested = false
            }
            return (state.pending, state.lostSince)
        }
        let now = self.now()
        guard !records.isEmpty else {
            state.withLock { state in
                if lostSince == nil, !state.status.catchingUp {
                    state.durableThrough = now - Self.catchUpMargin
                }
                state.status.lagMilliseconds = 0
                state.status.pending = 0
            }
            return
        }
        // What was reported before this batch was taken is in it; a
        // confirmation reported later has its done/ rename later too. The
        // margin covers the wall clock read when the file was renamed
        // against the one read when it was reported.
        let mark = min(records.lazy.map(\.confirmedAt).min() ?? now, lostSince ?? .max) - Self.catchUpMargin
        noteKeys(records)
        do {
            try ledger.record(records, replacingEqual: true)
            // Never kept above this batch's: a mark set before the wall
            // clock was stepped back would pass what is delivered after.
            if lostSince == nil { try ledger.setCatchUpMark(mark) }
        } catch {
            // Put them back for the next try, in front of what came since.
            state.withLock { state in
                state.pending.insert(contentsOf: records, at: 0)
                state.writing = nil
            }
            throw error
        }
        state.withLock { state in
            state.writing = nil
            if lostSince == nil, !state.status.catchingUp { state.durableThrough = mark }
            state.status.pending = state.pending.count
            state.status.lagMilliseconds = state.pending.first.map { max(0, self.now() - $0.confirmedAt) } ?? 0
        }
        try refreshStatus(ledger)
    }

    /// Rows and size for status, at open and after each write (an idle
    /// daemon does no work for it): the rows are counted at open, then
    /// kept by the writer's connection as it writes.
    private func refreshStatus(_ ledger: SQLiteLedger) throws(LedgerError) {
        let statistics = try ledger.statistics()
        let status = state.withLock { state in
            state.status.rows = statistics.rows
            state.status.bytes = statistics.bytes
            return state.status
        }
        observe(status)
    }

    /// LedgerRetention=: at start, then at most once a day while written to.
    private func maintain(_ ledger: SQLiteLedger) throws(LedgerError) {
        let now = self.now()
        guard state.withLock({ now - $0.prunedAt >= 86_400_000 }) else { return }
        let removed = try ledger.prune(confirmedBefore: now - settings.retention.milliseconds)
        state.withLock { $0.prunedAt = now }
        if removed > 0 {
            log.write(LogEntry(.info, "the ledger forgot \(removed) key(s) last confirmed more than "
                               + "\(TimeSpan.format(settings.retention)) ago (LedgerRetention=)"))
            try refreshStatus(ledger)
        }
    }

    // MARK: The key filter

    /// Adds the keys of `records`, about to be committed, to the filter (a
    /// look-up meanwhile asks SQLite, which says "not yet"); one that
    /// outgrew its room is built again, bigger.
    private func noteKeys(_ records: [LedgerRecord]) {
        guard let filter = keys.withLock({ $0 }) else { return }
        for record in records { filter.add(destination: record.destination, key: record.key) }
        guard filter.isFull else { return }
        buildKeyFilter(holding: filter.capacity)
        // The new filter's scan may read the ledger before these are
        // committed: without them it would answer "never recorded" for
        // keys the ledger holds, for the rest of the run.
        guard let bigger = keys.withLock({ $0 }), bigger !== filter else { return }
        for record in records { bigger.add(destination: record.destination, key: record.key) }
    }

    /// Installs a new filter with room for `rows` and half as many again
    /// (at least a million), and fills it from the ledger on a thread of
    /// its own; the writer adds what it commits meanwhile.
    private func buildKeyFilter(holding rows: Int) {
        // Without its memory look-ups ask SQLite, as before it existed.
        guard let filter = LedgerKeyFilter(capacity: max(settings.keyFilterCapacity, rows + rows / 2)) else { return }
        keys.withLock { $0 = filter }
        let path = settings.path
        do {
            try DedicatedThread.start(name: "txrecon-ledger-keys") {
                // A failure leaves it not ready: every look-up asks SQLite, as before.
                let scanned: Void? = try? SQLiteLedger(path: path, access: .readOnly, cache: .scan).forEachKey { destination, key in
                    filter.add(destination: destination, key: key)
                }
                if scanned != nil { filter.markReady() }
            }
        } catch {
            // No thread: look-ups ask SQLite, as before.
        }
    }

    // MARK: Catch-up

    /// At the first successful open (and after the ledger was unavailable),
    /// records every delivered snapshot in done/ changed since the mark.
    private func catchUpIfNeeded(_ ledger: SQLiteLedger) throws(LedgerError) {
        guard state.withLock({ $0.status.catchingUp || $0.lostSince != nil }) else { return }
        let mark = try ledger.catchUpMark()
        let startedAt = now()
        // What was let go before now is in done/ and read below.
        let lostSince = state.withLock { state in
            defer { state.lostSince = nil }
            return state.lostSince
        }
        // A mark later than now was set before the wall clock was stepped
        // back: what was delivered since is dated before it, by how much
        // nobody knows, so all of done/ is read. (A batch written after a
        // step moves the mark back with the clock: writePending.)
        let since = mark - Self.catchUpMargin > startedAt ? 0
            : min(mark, lostSince ?? .max) - Self.catchUpMargin
        var recorded = 0
        do {
            for (name, spool) in settings.destinations {
                recorded += try catchUp(ledger, destination: name, spool: spool, since: since, before: startedAt)
            }
            // Everything in done/ that changed before the catch-up began is in.
            try ledger.setCatchUpMark(startedAt - Self.catchUpMargin)
        } catch {
            // The next catch-up reads from there again.
            if let lostSince { state.withLock { $0.lostSince = min($0.lostSince ?? .max, lostSince) } }
            throw error
        }
        let status = state.withLock { state in
            state.readFailures = [:]
            state.status.catchingUp = false
            state.durableThrough = startedAt - Self.catchUpMargin
            return state.status
        }
        observe(status)
        if recorded > 0 {
            log.write(LogEntry(mark == 0 ? .notice : .info, "the ledger caught up from done/: \(recorded) "
                               + "delivered snapshot(s) recorded that it did not hold yet"
                               + (mark == 0 ? " (a new or rebuilt ledger)" : " (confirmed just before the last stop)")))
        }
    }

    /// Whether reading a delivered snapshot failed for good, as far as the
    /// catch-up can wait: larger than MaxFileSize=, or a permission its
    /// owner took away (a producer's file keeps its owner in done/, and
    /// `chmod 000` on it would otherwise fail every catch-up, keeping the
    /// reaper from done/ for everyone until the disk is full). Either stays
    /// in done/ until DoneRetention=, read by the supersede rule as before.
    /// internal for testing
    static func willNeverRead(_ error: SpoolError) -> Bool {
        error.code == EFBIG || error.code == EACCES || error.code == EPERM
    }

    /// Catch-ups in a row one delivered snapshot may fail as "cannot be
    /// read just now" (EIO, a receipt part's receipt unreadable) before it
    /// is skipped as one that will never read: 10, ten minutes at the
    /// retry interval. Without a bound one bad sector in done/ failed every
    /// catch-up, and kept the reaper from done/ until its disk was full.
    static let readTriesBeforeSkipping = 10

    /// `path` failed this catch-up; whether it has failed in
    /// `readTriesBeforeSkipping` catch-ups since the last that succeeded
    /// (it is skipped then). Every path's count is kept until one does: two
    /// such files (or one inode linked into two destinations' done/)
    /// would otherwise take turns, and neither reach the count.
    private func failsForGood(_ path: String) -> Bool {
        state.withLock { state in
            let tries = state.readFailures[path, default: 0] + 1
            state.readFailures[path] = tries
            return tries >= Self.readTriesBeforeSkipping
        }
    }

    /// Records `spool`'s delivered snapshots changed at or after `since`
    /// (ms since 1970) for `destination`; returns how many. One changed
    /// since `before`, when the catch-up began, is read only when no report
    /// of its key waits here: what this process delivered is reported
    /// after its rename into done/, and reading those again would chase a
    /// done/ that grows as fast as the engines deliver. Its change time is
    /// no proof that this process delivered it: a fan-out's copies are
    /// links to one inode, so another destination's move of its own link
    /// (a delivery during the catch-up) changes this one's ctime too, and
    /// a wall clock stepped back across a restart dates a file delivered
    /// before it "later".
    private func catchUp(_ ledger: SQLiteLedger, destination: String, spool: Spool,
                         since: Int64, before: Int64) throws(LedgerError) -> Int {
        var batch: [LedgerRecord] = []
        var recorded = 0
        var failure: LedgerError?
        var unreadable: [(name: String, why: String)] = []
        var changedSinceStart: [(key: ItemKey, changed: Int64)] = []
        let done = spool.layout.done
        let (reader, maximumFileSize) = reading.withLock { $0 }
        func notReadYet(_ key: ItemKey, _ error: SpoolError) -> LedgerError {
            LedgerError(operation: "catch up from", path: done, code: 0,
                        message: "\(done)/\(key.fileName) cannot be read just now (\(error)); it is read again "
                            + "at the next try, and stays in done/ until then")
        }
        func readFailed(_ key: ItemKey, _ error: SpoolError) {
            if failsForGood(done + "/" + key.fileName) {
                unreadable.append((key.fileName, "\(error), having failed \(Self.readTriesBeforeSkipping) catch-ups"))
            } else {
                failure = notReadYet(key, error)
            }
        }
        func add(_ key: ItemKey, changed: Int64) {
            // A file that will never read (`willNeverRead`, no longer
            // decoding or verifying) is skipped with a warning: the
            // supersede rule cannot read it either, and waiting for it would
            // keep the reaper from done/ for good. One that cannot be read
            // just now (EIO, EMFILE, a receipt part's receipt unreadable) is
            // a failed catch-up, as an unlistable done/ is: passed over, the
            // mark and the watermark would pass it, and the reaper would
            // remove a delivery the ledger never recorded.
            let bytes: [UInt8]
            do {
                guard let read = try spool.read(.done, key, maximumSize: maximumFileSize) else { return }
                bytes = read
            } catch where Self.willNeverRead(error) {
                unreadable.append((key.fileName, "\(error)"))
                return
            } catch {
                readFailed(key, error)
                return
            }
            let item: Item
            do {
                item = try reader.item(bytes, key: key)
            } catch {
                switch error {
                case let .rejected(rejection): unreadable.append((key.fileName, "\(rejection)"))
                case let .unreadable(cause): readFailed(key, cause)
                }
                return
            }
            batch.append(LedgerRecord(destination: destination, key: item.key, version: item.version,
                                      confirmedAt: changed, attempt: 0,
                                      confirmation: "recorded from done/", kind: item.kind,
                                      identity: LedgerRecord.Identity(item.fields)))
            guard batch.count >= 1_000 else { return }
            do throws(LedgerError) {
                noteKeys(batch)
                try ledger.record(batch, replacingEqual: false)
                recorded += batch.count
                batch.removeAll(keepingCapacity: true)
            } catch {
                failure = error
            }
        }
        do {
            try SystemCall.forEachName(in: done) { bytes in
                guard failure == nil, !bytes.contains(UInt8(ascii: ".")),
                      let name = String(validating: bytes, as: UTF8.self), let key = ItemKey(fileName: name),
                      let info = try? SystemCall.linkStatus(done + "/" + name) else { return }
                let changed = Int64(info.st_ctim.tv_sec) * 1000 + Int64(info.st_ctim.tv_nsec) / 1_000_000
                guard changed >= since else { return }
                if changed >= before {
                    changedSinceStart.append((key, changed))
                } else {
                    add(key, changed: changed)
                }
            }
        } catch where error.code == ENOENT {
            // No done/ (a destination added since the daemon started): nothing to read.
        } catch {
            // Unread, it is not caught up: the mark and the watermark must
            // not pass what it holds, which the reaper would then remove.
            throw LedgerError(operation: "catch up from", path: done, code: 0, message: error.description)
        }
        // Taken after the walk: a rename the walk saw was reported by now,
        // or is read (twice recorded at one version is harmless).
        let candidates = Set(changedSinceStart.map(\.key))
        let reported = candidates.isEmpty ? [] : state.withLock { state in
            Set(state.pending.lazy.filter { $0.destination == destination && candidates.contains($0.key) }.map(\.key))
        }
        for (key, changed) in changedSinceStart where failure == nil && !reported.contains(key) {
            add(key, changed: changed)
        }
        if let failure { throw failure }
        noteKeys(batch)
        try ledger.record(batch, replacingEqual: false)
        if let first = unreadable.first {
            log.write(LogEntry(.warning, "\(unreadable.count) delivered snapshot(s) in \(spool.layout.relative(.done))/ "
                               + "could not be read or no longer decode and verify, and are not in the ledger (for "
                               + "one, \(LogText.escaped(first.name)): \(LogText.singleLine(first.why, limit: 200))); they "
                               + "stay in done/ until DoneRetention=, where the supersede rule reads them as before",
                               fields: [("TXRECON_DESTINATION", destination)]))
        }
        return recorded + batch.count
    }
}
