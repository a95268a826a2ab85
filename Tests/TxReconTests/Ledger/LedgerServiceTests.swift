// The daemon's ledger service on a temporary spool: confirmations written
// off the caller's thread, the catch-up from done/ at start (which never
// takes a real confirmation's place), the rebuild of a damaged ledger, a
// ledger that cannot be opened (delivery's side goes on), and the
// watermark DoneReaper waits for.
import Dispatch
import Glibc
import Synchronization
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct LedgerServiceTests {
    let directory = TemporaryDirectory("txrecon-ledger-service")
    let layout: SpoolLayout
    let spool: Spool
    let log = RecordingLogSink()

    init() throws {
        layout = SpoolLayout(root: directory.path + "/spool")
        try layout.createMissingDirectories()
        spool = Spool(layout: layout)
    }

    /// The service's settings on this suite's spool (its one destination
    /// unless `destinations` says otherwise).
    func settings(path: String? = nil, retention: Duration = .seconds(2 * 365 * 86_400),
                  destinations: [(name: String, spool: Spool)]? = nil) -> LedgerService.Settings {
        LedgerService.Settings(
            path: path ?? directory.path + "/state/ledger.sqlite3", retention: retention,
            destinations: destinations ?? [(Destination.primaryName, spool)],
            reader: StoredItemReader(acceptEnvelopes: true, policy: nil,
                                     receipts: ReceiptLibrary(store: ReceiptStore(layout: SpoolLayout(root: "/nonexistent")))),
            maximumFileSize: 1 << 20)
    }

    func service(path: String? = nil, retention: Duration = .seconds(2 * 365 * 86_400)) -> LedgerService {
        LedgerService(settings: settings(path: path, retention: retention), log: log)
    }

    static func envelope(_ id: String, version: Int64) -> Item {
        Item(key: ItemKey(id)!, version: ItemVersion(primary: version), kind: .envelope, payload: .object([]))
    }

    /// This suite's ledger as a service that then stopped left it: each of
    /// `ids` confirmed by the backend at `version` on `attempt`.
    func ledgerHolding(_ ids: [String], version: Int64, attempt: Int = 1) throws {
        let first = service()
        try first.start()
        for id in ids {
            first.record(destination: "backend", item: Self.envelope(id, version: version), attempt: attempt,
                         confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        }
        first.flush()
        first.stop()
    }

    /// done/KEY as a delivery leaves it: the envelope's file.
    func delivered(_ id: String, version: Int64) {
        _ = directory.write(#"{"id":"\#(id)","version":\#(version),"payload":{}}"#, to: "spool/done/" + id)
    }

    @Test func aConfirmationIsWrittenOffTheCallersThreadAndLookedUp() throws {
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        ledger.record(destination: "backend", item: Self.envelope("k1", version: 3), attempt: 2,
                      confirmation: .http(status: 204), at: Timestamp.nowMilliseconds())
        ledger.flush()
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k1")!) == ItemVersion(primary: 3))
        #expect(ledger.confirmedVersion(at: "analytics", of: ItemKey("k1")!) == nil)
        let status = ledger.status
        #expect(status.unavailable == nil && !status.catchingUp && status.lagMilliseconds == 0 && status.pending == 0)
        #expect(ledger.durableThrough > 0, "the reaper may remove what the ledger holds")
    }

    /// After a drain the engines go quiet; the status must still learn
    /// that the writer's backlog is written, from the writer itself.
    @Test(.timeLimit(.minutes(1)))
    func theWriterTellsTheStatusWhenItsBacklogIsWritten() async throws {
        let observed = Recorded<LedgerService.Status>()
        let ledger = LedgerService(settings: settings(retention: .seconds(86_400)), log: log,
                                   observe: { observed.record($0) })
        try ledger.start()
        defer { ledger.stop() }
        _ = await observed.waitFor { !$0.catchingUp && $0.pending == 0 }
        let before = observed.count
        for index in 0..<50 {
            ledger.record(destination: "backend", item: Self.envelope("k\(index)", version: 1), attempt: 1,
                          confirmation: .http(status: 204), at: Timestamp.nowMilliseconds())
        }
        let written = await observed.waitFor(after: before) { $0.pending == 0 && $0.lagMilliseconds == 0 }
        #expect(written.unavailable == nil)
    }

    /// A batch that reaches `batchLimit` is written without waiting out
    /// the interval (an hour here): what waits in memory stays bounded.
    /// Waits on the writer's word that it went idle, at most a minute, so
    /// that a writer that does wait out the hour fails the test, not hangs
    /// it (0.06 s alone, 13–26 s under `make test-loaded`, the whole suite
    /// beside it). It failed under load when the flush before it left its
    /// request set: the next confirmation was then written at once, alone,
    /// and the rest of the batch waited out the hour.
    @Test func aFullBatchIsWrittenWithoutWaitingForTheInterval() throws {
        let idle = DispatchSemaphore(value: 0)
        let recording = Atomic<Bool>(false)
        var settings = settings(retention: .seconds(86_400))
        settings.batchInterval = .seconds(3_600)
        let ledger = LedgerService(settings: settings, log: log, observe: { status in
            // The writer tells the status each time it goes idle.
            if recording.load(ordering: .acquiring), status.pending == 0 { idle.signal() }
        })
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        recording.store(true, ordering: .releasing)
        for index in 0..<LedgerService.batchLimit {
            ledger.record(destination: "backend", item: Self.envelope("k\(index)", version: 1), attempt: 1,
                          confirmation: .http(status: 204), at: Timestamp.nowMilliseconds())
        }
        // Each time the writer goes idle (the start's own round may say so
        // late), look.
        let last = ItemKey("k\(LedgerService.batchLimit - 1)")!
        let deadline = DispatchTime.now() + 60
        var written = false
        while !written, idle.wait(timeout: deadline) == .success {
            written = ledger.confirmedVersion(at: "backend", of: last) == ItemVersion(primary: 1)
        }
        #expect(written, "the writer waits out the interval")
    }

    /// A flush once the writer has ended has nothing to wait for: it
    /// returns (it waited for a round no writer would end). Bounded: a
    /// flush that still waits fails the test after 30 s, not hangs it.
    @Test func aFlushAfterStopReturns() throws {
        let ledger = service()
        try ledger.start()
        ledger.record(destination: "backend", item: Self.envelope("k1", version: 1), attempt: 1,
                      confirmation: .http(status: 204), at: Timestamp.nowMilliseconds())
        ledger.stop()
        let returned = DispatchSemaphore(value: 0)
        try DedicatedThread.start(name: "test-flush") {
            ledger.flush()
            returned.signal()
        }
        #expect(returned.wait(timeout: .now() + 30) == .success, "flush waits for a writer that has ended")
    }

    @Test func theIdempotencyKeyTheLedgerShowsIsTheOneTheRequestCarried() throws {
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        // A key that needs escaping, a refund's version with its notification's date.
        let item = Item(key: ItemKey("a b%c")!, version: ItemVersion(primary: 7, revoked: true, secondary: 9),
                        kind: .envelope, payload: .null)
        let sent = RequestBuilder(softwareVersion: "1", secrets: BackendSecrets())
            .request(for: item, attempt: 1, receivedAt: 0, signedAt: 0).header("Idempotency-Key")
        ledger.record(destination: "backend", item: item, attempt: 1, confirmation: .http(status: 200),
                      at: Timestamp.nowMilliseconds())
        ledger.flush()
        let reader = try SQLiteLedger(path: directory.path + "/state/ledger.sqlite3", access: .readOnly)
        #expect(try reader.records(of: item.key).map(\.idempotencyKey) == [try #require(sent)])
    }

    @Test func theStartCatchesUpFromDoneWhatTheLedgerLostWithoutOverwritingWhatItHeld() throws {
        try ledgerHolding(["known"], version: 5, attempt: 3)
        // Delivered just before a crash took the confirmations still in memory.
        delivered("known", version: 5)
        delivered("lost", version: 7)
        let second = service()
        try second.start()
        defer { second.stop() }
        second.flush()
        #expect(second.confirmedVersion(at: "backend", of: ItemKey("lost")!) == ItemVersion(primary: 7))
        let reader = try SQLiteLedger(path: directory.path + "/state/ledger.sqlite3", access: .readOnly)
        let known = try #require(try reader.records(of: ItemKey("known")!).first)
        #expect(known.attempt == 3 && known.confirmation == "HTTP 200", "the engine's report stays, richer than done/'s")
        let lost = try #require(try reader.records(of: ItemKey("lost")!).first)
        #expect(lost.confirmation == "recorded from done/" && lost.attempt == 0)
    }

    /// A fan-out's copies are links to one inode: the primary destination's
    /// delivery of its copy during the catch-up changes the ctime of the
    /// further destination's done/ entry, which a cut left unrecorded. Seen
    /// in the two-destination power-cut test: the catch-up took that change
    /// time for "delivered by this process, reported already" and skipped
    /// it, for good. A clock that reads an hour early dates both files
    /// after the catch-up began, as that delivery (or a wall clock stepped
    /// back across a restart) does.
    @Test func aDeliveredSnapshotChangedSinceTheCatchUpBeganIsRecordedUnlessItsReportWaits() throws {
        let second = layout.destination("second")
        try second.createMissingDestinationDirectories()
        let cut = directory.write(#"{"id":"cut","version":1,"payload":{}}"#, to: "spool/destinations/second/done/cut")
        #expect(link(cut, layout.queue + "/cut") == 0, "the primary destination's copy, pending")
        _ = directory.write(#"{"id":"reported","version":2,"payload":{}}"#,
                            to: "spool/destinations/second/done/reported")
        let ledger = LedgerService(
            settings: settings(retention: .seconds(86_400),
                               destinations: [(Destination.primaryName, spool), ("second", Spool(layout: second))]),
            log: log, now: { Timestamp.nowMilliseconds() - 3_600_000 })
        // Delivered by this process: its report waits for the writer.
        ledger.record(destination: "second", item: Self.envelope("reported", version: 2), attempt: 1,
                      confirmation: .http(status: 204), at: Timestamp.nowMilliseconds())
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        #expect(ledger.confirmedVersion(at: "second", of: ItemKey("cut")!) == ItemVersion(primary: 1))
        #expect(ledger.confirmedVersion(at: "second", of: ItemKey("reported")!) == ItemVersion(primary: 2))
        let caughtUp = log.entries.filter { $0.message.contains("the ledger caught up from done/") }.map(\.message)
        #expect(caughtUp.count == 1 && caughtUp[0].contains(": 1 delivered snapshot(s)"),
                "the reported one is not read again: \(caughtUp)")
    }

    @Test func aDamagedLedgerIsSetAsideAndRebuiltFromDoneWithAnError() throws {
        _ = directory.write(String(repeating: "damaged ", count: 1024), to: "state/ledger.sqlite3")
        delivered("k", version: 9)
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 9))
        #expect(log.entries.contains { $0.priority == .error && $0.message.contains("is damaged") })
        let names = (try? SystemCall.listDirectory(directory.path + "/state")) ?? []
        #expect(names.contains { $0.hasPrefix("ledger.sqlite3.damaged-") }, "kept for a person to look at: \(names)")
    }

    @Test func aLedgerThatCannotBeOpenedCostsItsHistoryNeverADelivery() throws {
        // Its directory is a file: nothing can be created there.
        let blocked = directory.write("a file", to: "blocked")
        let ledger = service(path: blocked + "/ledger.sqlite3")
        try ledger.start()
        defer { ledger.stop() }
        ledger.record(destination: "backend", item: Self.envelope("k", version: 1), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        ledger.flush()
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == nil, "not known: done/ answers")
        #expect(ledger.status.unavailable != nil)
        #expect(ledger.durableThrough == 0, "the reaper removes no delivered snapshot the ledger does not hold")
        #expect(log.entries.filter { $0.priority == .error && $0.message.contains("cannot be used") }.count == 1)
    }

    /// A started service on `clock` whose ledger holds backend's k at 3,
    /// and whose look-ups have just failed: an operator's sqlite3 (the
    /// connection returned) renamed the table away.
    func failingLookUps(_ clock: ManualClock) throws -> (ledger: LedgerService, operatorShell: SQLiteDatabase) {
        let ledger = LedgerService(settings: settings(), log: log, now: { clock.wallMilliseconds })
        try ledger.start()
        ledger.record(destination: "backend", item: Self.envelope("k", version: 3), attempt: 1,
                      confirmation: .http(status: 200), at: clock.wallMilliseconds)
        ledger.flush()
        #expect(ledger.waitForKeyFilter(timeout: .seconds(60)), "the filter sends the look-ups of k to SQLite")
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 3))
        let operatorShell = try SQLiteDatabase(path: directory.path + "/state/ledger.sqlite3", access: .readWriteCreate)
        try operatorShell.execute("ALTER TABLE confirmations RENAME TO held")
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == nil, "not known: done/ answers")
        return (ledger, operatorShell)
    }

    @Test func aLookUpThatFailsCostsDoneAloneOnlyUntilTheConnectionIsOpenedAgain() throws {
        let clock = ManualClock()
        let (ledger, operatorShell) = try failingLookUps(clock)
        defer { ledger.stop() }
        let key = ItemKey("k")!
        #expect(log.entries.filter { $0.priority == .error && $0.message.contains("a look-up in the ledger") }.count == 1)
        clock.jumpWallClock(by: LedgerLookups.retryInterval)
        #expect(ledger.confirmedVersion(at: "backend", of: key) == nil, "tried again, and still failing")
        #expect(!log.entries.contains { $0.message.contains("work again") })
        try operatorShell.execute("ALTER TABLE held RENAME TO confirmations")
        #expect(ledger.confirmedVersion(at: "backend", of: key) == nil, "not asked again before the retry interval")

        clock.jumpWallClock(by: LedgerLookups.retryInterval)
        #expect(ledger.confirmedVersion(at: "backend", of: key) == ItemVersion(primary: 3),
                "the writer never failed, yet look-ups work again")
        #expect(log.entries.contains { $0.priority == .notice && $0.message.contains("work again") })
        #expect(log.entries.filter { $0.priority == .error }.count == 1, "one error for the whole spell")
    }

    /// A ledger file removed under the running daemon: the look-ups'
    /// reopen fails, and says so, rather than making a new, empty ledger
    /// beside the inode the writer still writes.
    @Test func aLookUpsReopenNeverCreatesTheLedgerFile() throws {
        let clock = ManualClock()
        let (ledger, _) = try failingLookUps(clock)
        defer { ledger.stop() }
        let path = directory.path + "/state/ledger.sqlite3"
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        clock.jumpWallClock(by: LedgerLookups.retryInterval)
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == nil)
        #expect(access(path, F_OK) != 0, "no empty ledger was made where the file was removed")
    }

    /// The ledger file removed under the running daemon (an operator
    /// freeing space): SQLite would go on writing the removed inode, and
    /// the look-ups reading it, while the reaper removes done/ entries that
    /// only the removed file covers. The writer opens the file again, made
    /// anew and caught up from done/, and the look-ups follow it.
    @Test func aLedgerFileRemovedUnderTheDaemonIsMadeAgainAndCaughtUpFromDone() throws {
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        delivered("a", version: 1)
        ledger.record(destination: "backend", item: Self.envelope("a", version: 1), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        // Only in the old file (its done/ entry reaped): only its log could bring it back.
        ledger.record(destination: "backend", item: Self.envelope("reaped", version: 1), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        ledger.flush()
        let path = directory.path + "/state/ledger.sqlite3"
        // The database alone, as `rm ledger.sqlite3` does: its write-ahead
        // log, which SQLite then leaves there, must not be read into the
        // ledger made again.
        unlink(path)
        delivered("b", version: 2)
        ledger.record(destination: "backend", item: Self.envelope("b", version: 2), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        ledger.flush()
        #expect(access(path, F_OK) == 0, "made again where it was removed")
        let reader = try SQLiteLedger(path: path, access: .readOnly)
        #expect(try reader.records(of: ItemKey("b")!).map(\.version) == [ItemVersion(primary: 2)])
        #expect(try reader.records(of: ItemKey("a")!).map(\.version) == [ItemVersion(primary: 1)], "from done/")
        #expect(try reader.records(of: ItemKey("reaped")!).isEmpty, "nothing of the old file's log in the new one")
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("b")!) == ItemVersion(primary: 2),
                "the look-ups read the file at the path, not the removed one")
        #expect(log.entries.contains { $0.priority == .error && $0.message.contains("was removed while txrecon had it open") })
        let names = try SystemCall.listDirectory(directory.path + "/state")
        #expect(!names.contains { $0.contains(".damaged-") }, "the old log was not read into the new file: \(names)")
        #expect(names.contains { $0.hasPrefix("ledger.sqlite3.replaced-") && $0.hasSuffix("-wal") }, "\(names)")
    }

    /// The ledger file replaced under the daemon by a copy kept aside (a
    /// restore from a backup, `mv`): the writer opens the copy and catches
    /// up from done/; the running file's write-ahead log, which SQLite
    /// leaves at the path, must not be read into the copy.
    @Test func aLedgerFileReplacedUnderTheDaemonIsOpenedWithoutTheOldLog() throws {
        let path = directory.path + "/state/ledger.sqlite3"
        try SystemCall.makeDirectory(directory.path + "/state", mode: 0o700)
        let backup = directory.path + "/state/backup.sqlite3"
        do {
            let copy = try SQLiteLedger(path: backup)
            try copy.record([LedgerRecord(destination: "backend", key: ItemKey("old")!, version: ItemVersion(primary: 1),
                                          confirmedAt: 1_000, attempt: 1, confirmation: "HTTP 200", kind: .envelope,
                                          identity: LedgerRecord.Identity(ItemFields()))])
        }
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        ledger.record(destination: "backend", item: Self.envelope("reaped", version: 1), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        ledger.flush()
        #expect(rename(backup, path) == 0)
        delivered("b", version: 2)
        ledger.record(destination: "backend", item: Self.envelope("b", version: 2), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        ledger.flush()
        #expect(log.entries.contains { $0.priority == .error && $0.message.contains("was replaced while txrecon had it open") })
        let names = try SystemCall.listDirectory(directory.path + "/state")
        #expect(!names.contains { $0.contains(".damaged-") }, "\(names)")
        let reader = try SQLiteLedger(path: path, access: .readOnly)
        #expect(try reader.records(of: ItemKey("old")!).count == 1, "the copy's own")
        #expect(try reader.records(of: ItemKey("b")!).count == 1)
        #expect(try reader.records(of: ItemKey("reaped")!).isEmpty, "nothing of the old file's log in the copy")
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("old")!) == ItemVersion(primary: 1))
    }

    /// A broken page only look-ups read (the writer never touches it): they
    /// would answer "not known" of its keys for good. The writer is told,
    /// and sets the file aside and rebuilds it from done/, as it does
    /// damage it finds itself.
    @Test func damageTheLookUpsFindIsSetAsideAndRebuilt() throws {
        let path = directory.path + "/state/ledger.sqlite3"
        try ledgerHolding((0..<2_000).map { "k\($0)" }, version: 4)
        delivered("k7", version: 4)
        let shell = try SQLiteDatabase(path: path, access: .readWriteCreate)
        try shell.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        // Every page but the first (the schema) overwritten: the table's own.
        let descriptor = open(path, O_WRONLY)
        #expect(descriptor >= 0)
        let size = lseek(descriptor, 0, SEEK_END)
        let garbage = [UInt8](repeating: 0xA5, count: Int(size) - 4096)
        #expect(pwrite(descriptor, garbage, garbage.count, 4096) == garbage.count)
        close(descriptor)
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k7")!) == nil, "not known while damaged")
        ledger.flush()
        let names = (try? SystemCall.listDirectory(directory.path + "/state")) ?? []
        #expect(names.contains { $0.hasPrefix("ledger.sqlite3.damaged-") }, "set aside: \(names)")
        #expect(log.entries.contains { $0.priority == .error && $0.message.contains("is damaged") })
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k7")!) == ItemVersion(primary: 4),
                "rebuilt from done/")
    }

    /// A ledger missing at start while done/ holds deliveries existed
    /// before (or LedgerFile= changed): what it held older than
    /// DoneRetention= is lost, which an error says.
    @Test func aLedgerMissingAtStartBesideDeliveriesIsAnError() throws {
        let installed = service(path: directory.path + "/state/installed.sqlite3")
        try installed.start()
        installed.flush()
        installed.stop()
        #expect(!log.entries.contains { $0.priority == .error }, "a new installation's first start")
        delivered("k", version: 1)
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        #expect(log.entries.contains { $0.priority == .error && $0.message.contains("did not exist and was made anew") })
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 1))
    }

    /// A mark written while the wall clock ran ten minutes ahead, then the
    /// clock stepped back: what was delivered after the step is dated
    /// before the mark, and a crash took its confirmation.
    @Test func aMarkSetBeforeTheClockWasSteppedBackDoesNotHideWhatWasDeliveredAfter() throws {
        do {
            let ahead = LedgerService(settings: settings(), log: log,
                                      now: { Timestamp.nowMilliseconds() + 600_000 })
            try ahead.start()
            ahead.record(destination: "backend", item: Self.envelope("before", version: 1), attempt: 1,
                         confirmation: .http(status: 200), at: Timestamp.nowMilliseconds() + 600_000)
            ahead.flush()
            ahead.stop()
        }
        delivered("after", version: 7)
        let second = service()
        try second.start()
        defer { second.stop() }
        second.flush()
        #expect(second.confirmedVersion(at: "backend", of: ItemKey("after")!) == ItemVersion(primary: 7))
    }

    /// A batch written after the step moves the mark back with the clock,
    /// so a crash later still finds what it took in done/.
    @Test func aBatchWrittenAfterTheClockWasSteppedBackMovesTheMarkBack() throws {
        let clock = ManualClock()
        let path = directory.path + "/state/ledger.sqlite3"
        let ledger = LedgerService(settings: settings(), log: log, now: { clock.wallMilliseconds })
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        #expect(try SQLiteLedger(path: path, access: .readOnly).catchUpMark() > clock.wallMilliseconds - 120_000)
        clock.jumpWallClock(by: -600_000)
        ledger.record(destination: "backend", item: Self.envelope("k", version: 1), attempt: 1,
                      confirmation: .http(status: 200), at: clock.wallMilliseconds)
        ledger.flush()
        #expect(try SQLiteLedger(path: path, access: .readOnly).catchUpMark()
                <= clock.wallMilliseconds - LedgerService.catchUpMargin)
    }

    /// The watermark follows the clock back too: set ahead of the clock, it
    /// would let the reaper remove a delivery made after the step (dated
    /// before it) while its confirmation waits, or when it is never written.
    @Test func theWatermarkFollowsTheClockBackAndStaysBelowWhatWaits() throws {
        let clock = ManualClock()
        let ledger = LedgerService(settings: settings(), log: log, now: { clock.wallMilliseconds })
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        #expect(ledger.durableThrough > clock.wallMilliseconds - 120_000)
        clock.jumpWallClock(by: -600_000)
        ledger.record(destination: "backend", item: Self.envelope("k", version: 1), attempt: 1,
                      confirmation: .http(status: 200), at: clock.wallMilliseconds)
        #expect(ledger.durableThrough <= clock.wallMilliseconds - LedgerService.catchUpMargin,
                "waiting or written, never passed")
        ledger.flush()
        #expect(ledger.durableThrough <= clock.wallMilliseconds - LedgerService.catchUpMargin)
        ledger.flush()
        #expect(ledger.durableThrough <= clock.wallMilliseconds - LedgerService.catchUpMargin,
                "an idle write after the step")
    }

    /// done/ that cannot be listed (here: not a directory) is not caught
    /// up, so neither the mark nor the watermark may pass it.
    @Test func aDoneThatCannotBeReadHoldsTheMarkAndTheWatermark() throws {
        delivered("lost", version: 7)
        #expect(rename(layout.done, layout.done + ".away") == 0)
        _ = directory.write("not a directory", to: "spool/done")
        do {
            let ledger = service()
            try ledger.start()
            ledger.flush()
            #expect(ledger.durableThrough == 0, "the reaper removes nothing the catch-up did not read")
            #expect(ledger.status.unavailable?.contains("done") == true, "\(String(describing: ledger.status))")
            ledger.stop()
        }
        #expect(unlink(layout.done) == 0 && rename(layout.done + ".away", layout.done) == 0)
        let second = service()
        try second.start()
        defer { second.stop() }
        second.flush()
        #expect(second.confirmedVersion(at: "backend", of: ItemKey("lost")!) == ItemVersion(primary: 7))
    }

    /// A delivered snapshot that cannot be read just now (a receipt part
    /// whose receipt read fails: a directory where the receipt belongs
    /// fails as EIO or EMFILE would) is not passed over: the mark and the
    /// watermark stay before it, so the reaper keeps it for the next try.
    @Test func aDeliveredSnapshotThatCannotBeReadJustNowHoldsTheMarkAndTheWatermark() throws {
        let receipt = String(repeating: "ab", count: 32)
        try SystemCall.makeDirectory(layout.receipts + "/" + receipt, mode: 0o750)
        let part = ReceiptSplit.part(receiptSha256: receipt, entry: "1000000000000001", context: nil)
        try SystemCall.writeNewFile(layout.done + "/1000000000000001", part, sync: false)
        let changed = try #require(try SystemCall.linkStatus(layout.done + "/1000000000000001"))
        var settings = self.settings()
        settings.reader = StoredItemReader(acceptEnvelopes: true, policy: try ReceiptUploadTests.policy(),
                                           receipts: ReceiptLibrary(store: ReceiptStore(layout: layout)))
        // Two minutes ahead: a catch-up that passed the file would put the
        // watermark after its change.
        let ledger = LedgerService(settings: settings, log: log, now: { Timestamp.nowMilliseconds() + 120_000 })
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        #expect(ledger.durableThrough <= Int64(changed.st_ctim.tv_sec) * 1000,
                "the reaper would remove a delivery the ledger never recorded")
        #expect(ledger.status.unavailable?.contains("done") == true, "\(String(describing: ledger.status))")
    }

    /// A delivered snapshot that cannot be read "just now" at every
    /// catch-up (a bad sector) is skipped after `readTriesBeforeSkipping` of
    /// them, with the warning: it failed every catch-up before, and kept the
    /// reaper from done/ until the disk was full. Two such files must not
    /// take turns, neither ever reaching the count.
    @Test(.timeLimit(.minutes(1)))
    func snapshotsThatFailEveryCatchUpAreSkippedAfterTenOfThem() async throws {
        let receipt = String(repeating: "ab", count: 32)
        try SystemCall.makeDirectory(layout.receipts + "/" + receipt, mode: 0o750)
        let bad = ["1000000000000001", "1000000000000002"]
        for entry in bad {
            let part = ReceiptSplit.part(receiptSha256: receipt, entry: entry, context: nil)
            try SystemCall.writeNewFile(layout.done + "/" + entry, part, sync: false)
        }
        delivered("readable", version: 3)
        var settings = self.settings()
        settings.reader = StoredItemReader(acceptEnvelopes: true, policy: try ReceiptUploadTests.policy(),
                                           receipts: ReceiptLibrary(store: ReceiptStore(layout: layout)))
        settings.retryInterval = .milliseconds(1)
        settings.batchInterval = .milliseconds(1)
        let observed = Recorded<LedgerService.Status>()
        let ledger = LedgerService(settings: settings, log: log, observe: { observed.record($0) })
        try ledger.start()
        defer { ledger.stop() }
        let caughtUp = await observed.waitFor { !$0.catchingUp && $0.unavailable == nil }
        #expect(caughtUp.unavailable == nil && ledger.durableThrough > 0, "caught up: the reaper goes on")
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("readable")!) == ItemVersion(primary: 3))
        for entry in bad {
            let failed = log.entries.filter { $0.priority == .error && $0.message.contains("\(entry) cannot be read just now") }
            #expect(failed.count == LedgerService.readTriesBeforeSkipping - 1, "\(entry): \(failed.count)")
        }
        #expect(log.entries.contains { $0.priority == .warning && $0.message.contains("having failed 10 catch-ups") })
    }

    /// A producer's file keeps its owner in done/, who may take the
    /// daemon's read permission away: that never passes with time, so it is
    /// skipped with the warning, as a file too large is, rather than
    /// failing every catch-up (and keeping the reaper from done/ for good).
    /// What passes with time (EIO, EMFILE, a lease being broken) still
    /// fails the catch-up, for the next try.
    @Test func onlyWhatNeverPassesWithTimeIsSkippedByTheCatchUp() {
        for code in [EFBIG, EACCES, EPERM] {
            #expect(LedgerService.willNeverRead(SpoolError("open", "done/k", code)), "\(code)")
        }
        for code in [EIO, EMFILE, ENFILE, EWOULDBLOCK, EINTR, ENOMEM] {
            #expect(!LedgerService.willNeverRead(SpoolError("open", "done/k", code)), "\(code)")
        }
    }

    /// A reload changes how done/ is read (here: envelopes accepted, as an
    /// app added would make its items verify): the next catch-up records
    /// what the start-up configuration would have skipped as foreign.
    @Test(.timeLimit(.minutes(1)))
    func aReloadsReaderIsTheOneTheNextCatchUpReadsWith() async throws {
        delivered("k", version: 4)
        // done/ is a symbolic link, to a file for now: the catch-up fails
        // until it is swapped, at once, for one to the directory (swapped
        // in two steps, a catch-up between them found no done/ at all and
        // took that as nothing to read: seen under `make test-loaded`).
        #expect(rename(layout.done, layout.done + ".away") == 0)
        _ = directory.write("not a directory", to: "spool/done.file")
        #expect(symlink("done.file", layout.done) == 0)
        var settings = self.settings()
        settings.reader = StoredItemReader(acceptEnvelopes: false, policy: nil, receipts: settings.reader.receipts)
        settings.retryInterval = .milliseconds(50)
        let observed = Recorded<LedgerService.Status>()
        let ledger = LedgerService(settings: settings, log: log, observe: { observed.record($0) })
        try ledger.start()
        defer { ledger.stop() }
        _ = await observed.waitFor { $0.unavailable != nil }
        ledger.reconfigure(reader: StoredItemReader(acceptEnvelopes: true, policy: nil, receipts: settings.reader.receipts),
                           maximumFileSize: 1 << 20)
        #expect(symlink("done.away", layout.done + ".next") == 0 && rename(layout.done + ".next", layout.done) == 0)
        _ = await observed.waitFor { $0.unavailable == nil && !$0.catchingUp }
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 4))
    }

    /// The writer cannot write (an operator's trigger refuses every row, as
    /// a lock or a full disk would stop it), but the file still reads:
    /// look-ups go on answering from it, and the reaper waits for the
    /// catch-up that follows the writer's return.
    @Test func aWriterThatCannotWriteLeavesLookUpsAnsweringAndTheReaperWaiting() throws {
        let ledger = service()
        try ledger.start()
        defer { ledger.stop() }
        let key = ItemKey("k")!
        ledger.record(destination: "backend", item: Self.envelope("k", version: 3), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        ledger.flush()
        #expect(ledger.durableThrough > 0)
        let operatorShell = try SQLiteDatabase(path: directory.path + "/state/ledger.sqlite3", access: .readWriteCreate)
        try operatorShell.execute("""
            CREATE TRIGGER refuse BEFORE INSERT ON confirmations BEGIN SELECT RAISE(ABORT, 'refused'); END;
            """)
        ledger.record(destination: "backend", item: Self.envelope("other", version: 1), attempt: 1,
                      confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        ledger.flush()
        #expect(ledger.status.unavailable != nil, "the writer failed: \(String(describing: ledger.status))")
        #expect(ledger.confirmedVersion(at: "backend", of: key) == ItemVersion(primary: 3),
                "a reader is not stopped by what stops the writer")
        #expect(ledger.durableThrough == 0, "the ledger the writer opens next may be a new one")
    }

    /// Look-ups made while the writer still opens the ledger (intake's scan
    /// at start runs beside it) wait for it, rather than answer "not known"
    /// of a key the ledger holds.
    @Test func aLookUpRightAfterStartAnswersFromTheLedger() throws {
        try ledgerHolding(["k"], version: 5)
        let second = service()
        try second.start()
        defer { second.stop() }
        #expect(second.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 5))
    }

    /// A broken page shows only when it is read, after the ledger opened:
    /// the file is set aside with its WAL (its newest commits) and the
    /// ledger rebuilt from done/, without waiting out the retry interval.
    @Test(.timeLimit(.minutes(1)))
    func damageFoundAfterOpenIsSetAsideWithItsWALAndRebuilt() async throws {
        let path = directory.path + "/state/ledger.sqlite3"
        try ledgerHolding((0..<5_000).map { "k\($0)" }, version: 1)
        let size = try #require(try SystemCall.linkStatus(path)).st_size
        let fd = open(path, O_WRONLY)
        #expect(fd >= 0)
        let garbage = [UInt8](repeating: 0x5A, count: Int(size) / 2)
        #expect(pwrite(fd, garbage, garbage.count, off_t(size) - off_t(garbage.count)) == garbage.count)
        close(fd)
        delivered("k", version: 9)

        let observed = Recorded<LedgerService.Status>()
        let ledger = LedgerService(settings: settings(), log: log, observe: { observed.record($0) })
        try ledger.start()
        defer { ledger.stop() }
        _ = await observed.waitFor { $0.unavailable == nil && !$0.catchingUp }
        #expect(ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 9))
        #expect(log.entries.contains { $0.priority == .error && $0.message.contains("is damaged") })
        let names = (try? SystemCall.listDirectory(directory.path + "/state")) ?? []
        #expect(names.contains { $0.hasPrefix("ledger.sqlite3.damaged-") && !$0.hasSuffix("-wal") })
        #expect(names.contains { $0.hasPrefix("ledger.sqlite3.damaged-") && $0.hasSuffix("-wal") },
                "its WAL kept beside it: \(names)")
    }

    /// A key filter that outgrows its room is built again from the ledger,
    /// whose scan may run before the batch that filled it is committed.
    @Test func theBatchThatOutgrowsTheKeyFilterIsInTheNextOne() throws {
        var small = settings()
        small.keyFilterCapacity = 64
        let ledger = LedgerService(settings: small, log: log)
        try ledger.start()
        defer { ledger.stop() }
        ledger.flush()
        #expect(ledger.waitForKeyFilter(timeout: .seconds(60)))
        let keys = (0..<200).map { "key-\($0)" }
        for key in keys {
            ledger.record(destination: "backend", item: Self.envelope(key, version: 2), attempt: 1,
                          confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
        }
        ledger.flush()
        #expect(ledger.waitForKeyFilter(timeout: .seconds(60)))
        let unknown = keys.filter { ledger.confirmedVersion(at: "backend", of: ItemKey($0)!) != ItemVersion(primary: 2) }
        #expect(unknown.isEmpty, "answered \"never recorded\": \(unknown.prefix(5))")
    }

    @Test func keysLastConfirmedBeforeTheRetentionAreForgottenAtStart() throws {
        do {
            let first = service()
            try first.start()
            first.record(destination: "backend", item: Self.envelope("old", version: 1), attempt: 1,
                         confirmation: .http(status: 200), at: Timestamp.nowMilliseconds() - 10 * 86_400_000)
            first.record(destination: "backend", item: Self.envelope("new", version: 1), attempt: 1,
                         confirmation: .http(status: 200), at: Timestamp.nowMilliseconds())
            first.flush()
            first.stop()
        }
        let second = service(retention: .seconds(86_400))
        try second.start()
        defer { second.stop() }
        second.flush()
        #expect(second.confirmedVersion(at: "backend", of: ItemKey("old")!) == nil)
        #expect(second.confirmedVersion(at: "backend", of: ItemKey("new")!) == ItemVersion(primary: 1))
    }
}
