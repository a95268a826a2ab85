// The claims of docs/crash-consistency.md that can be checked without a
// process to kill: a snapshot is never superseded by itself, a drop the
// spool cannot take stays in new/ and is reported, restored deadlines survive
// wall-clock jumps, and the spool never deletes or hides a producer's file.
// Manual clock and scripted transport: nothing here sleeps.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1)))
struct CrashConsistencyTests {
    // MARK: Engine

    @Test func aParkedSnapshotReadAgainByARescanIsNotSupersededByItself() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.hang])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await transport.waitForRequests(1)
        let newer = try harness.envelope("a", version: 2)
        await engine.offer([newer])
        await engine.offer([newer])
        #expect(harness.exists("new/" + newer.name), "the parked snapshot is still waiting in new/")
        transport.releaseHeld(with: .status(200))
        await harness.status.waitFor { $0.delivered == 2 }
        #expect(transport.requests.map { $0.header("Idempotency-Key") } == ["a:1", "a:2"])
        #expect(!harness.names(in: "done").contains { $0.hasPrefix("a.superseded-2") })
    }

    @Test func aDropTheSpoolCannotTakeIsReturnedAndStaysInNew() async throws {
        // No window: every drop is moved into queue/ at once.
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(inboxWindow: 0))
        let engine = try await harness.startedEngine()
        #expect(rmdir(harness.layout.queue) == 0)
        let drop = try harness.envelope("a", version: 1)
        let failures = await engine.offer([drop]).refused
        #expect(failures.map(\.name) == [drop.name])
        #expect(failures.first?.error.code == ENOENT)
        #expect(harness.exists("new/" + drop.name))
    }

    @Test func aRestartAfterTheWallClockWentBackWaitsNoLongerThanThePlannedDelay() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let first = harness.makeEngine()
        try await first.start()
        await first.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        await first.stop()
        harness.clock.jumpWallClock(by: -86_400_000)
        let second = harness.makeEngine()
        try await second.start()
        await harness.clock.waitForSleepers { $0.count == 1 }
        let deadline = try #require(harness.clock.sleeperDeadlines.first)
        #expect(deadline <= harness.clock.now + .seconds(2), "the planned 2 s, not the day the clock went back")
    }

    @Test func aWallClockJumpForwardDoesNotHurryAWaitingItem() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        let due = harness.clock.now + .seconds(2)
        await harness.clock.waitForSleeper(until: due)
        harness.clock.jumpWallClock(by: 3_600_000)
        #expect(harness.clock.advance(by: .seconds(1)) == 0, "nothing is due a second later, whatever the wall clock says")
        #expect(harness.clock.sleeperDeadlines == [due])
        harness.clock.advance(by: .seconds(1))
        await transport.waitForRequests(2)
    }

    @Test func aWallClockJumpBackDoesNotStallAWaitingItem() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.jumpWallClock(by: -3_600_000)
        harness.clock.advance(by: .seconds(2))
        await transport.waitForRequests(2)
    }

    // MARK: Spool

    @Test func aRejectedFileNamedLikeADaemonTemporaryIsKeptAndListed() throws {
        let harness = try EngineHarness()
        try SystemCall.writeNewFile(harness.layout.new + "/.tmp-x", Array("junk".utf8), sync: false)
        let movedTo = try harness.spool.reject(drop: ".tmp-x", because: Rejection("not-json", "junk"), at: 0)
        #expect(try harness.spool.restoreRejected() == 1)
        #expect(try harness.spool.rejectedNames() == [movedTo])
        #expect(!movedTo.hasPrefix("."))
    }

    @Test func aFileNamedNearTheLengthLimitIsRejectedWithItsReason() throws {
        let harness = try EngineHarness()
        let name = String(repeating: "n", count: 250)
        try SystemCall.writeNewFile(harness.layout.new + "/" + name, Array("junk".utf8), sync: false)
        let movedTo = try harness.spool.reject(drop: name, because: Rejection("not-json", "junk"), at: 0)
        #expect(harness.exists("rejected/" + movedTo + ".reason"))
        #expect(harness.names(in: "new") == [])
    }

    @Test func aFileWithAnotherHardLinkIsRefused() throws {
        let harness = try EngineHarness()
        let text = #"{"id":"a","version":1,"payload":{}}"#
        try SystemCall.writeNewFile(harness.layout.tmp + "/original", Array(text.utf8), sync: false)
        #expect(link(harness.layout.tmp + "/original", harness.layout.new + "/linked") == 0)
        let examination = DropExamination.examine("linked", in: harness.spool, maximumSize: 1 << 20,
                                                  decoder: InputDecoder(acceptEnvelopes: true), verifier: nil,
                                                  receipts: ReceiptLibrary(store: ReceiptStore(layout: harness.layout)))
        #expect(examination == .refused(Spool.hardLinked(names: 2)))
    }

    @Test func aDropWhoseOtherNameIsItsDeliveredItemIsTakenNotRefused() throws {
        let harness = try EngineHarness()
        let drop = try harness.envelope("a", version: 1)
        #expect(link(harness.layout.new + "/" + drop.name, harness.layout.done + "/a") == 0)
        let examination = DropExamination.examine(drop.name, in: harness.spool, maximumSize: 1 << 20,
                                                  decoder: InputDecoder(acceptEnvelopes: true), verifier: nil,
                                                  receipts: ReceiptLibrary(store: ReceiptStore(layout: harness.layout)))
        guard case let .decoded(.item(item), _, _, _) = examination else {
            Issue.record("not taken: \(examination)")
            return
        }
        #expect(item.key == ItemKey("a"))
    }

    @Test func aDropWithANameBesidesItsDeliveredItemIsStillRefused() throws {
        let harness = try EngineHarness()
        let drop = try harness.envelope("a", version: 1)
        #expect(link(harness.layout.new + "/" + drop.name, harness.layout.done + "/a") == 0)
        #expect(link(harness.layout.new + "/" + drop.name, harness.layout.tmp + "/a-kept") == 0)
        let examination = DropExamination.examine(drop.name, in: harness.spool, maximumSize: 1 << 20,
                                                  decoder: InputDecoder(acceptEnvelopes: true), verifier: nil,
                                                  receipts: ReceiptLibrary(store: ReceiptStore(layout: harness.layout)))
        #expect(examination == .refused(Spool.hardLinked(names: 3)), "tmp/a-kept could still change it")
    }

    @Test func aDeliveryInterruptedBeforeItsNewNameWasRemovedIsNotSentAgain() async throws {
        let transport = ScriptedTransport()
        let harness = try EngineHarness(transport: transport)
        let drop = try harness.envelope("a", version: 1)
        #expect(link(harness.layout.new + "/" + drop.name, harness.layout.done + "/a") == 0)
        let engine = try await harness.startedEngine()
        await engine.waitForDoneIndex()
        await engine.offer([drop])
        #expect(harness.names(in: "new") == [])
        #expect(harness.names(in: "done").sorted() == ["a", "a.superseded-1"])
        #expect(transport.requests.isEmpty)
    }

    @Test func aRetriedDeliveryInterruptedBeforeItsQueueNameWasRemovedIsNotSentAgain() async throws {
        let transport = ScriptedTransport()
        let harness = try EngineHarness(transport: transport)
        let drop = try harness.envelope("a", version: 1)
        #expect(rename(harness.layout.new + "/" + drop.name, harness.layout.queue + "/a") == 0)
        #expect(link(harness.layout.queue + "/a", harness.layout.done + "/a") == 0)
        try harness.spool.writeState(DeliveryState(attempts: 1), for: ItemKey("a")!)
        let engine = try await harness.startedEngine()
        await engine.stop()
        #expect(harness.names(in: "queue") == [])
        #expect(harness.names(in: "done").sorted() == ["a", "a.state"])
        #expect(transport.requests.isEmpty)
        #expect(harness.log.entries.contains { $0.message.contains("its name in queue/ removed") })
    }

    @Test func aPageNamedNearTheLengthLimitSplitsIntoNamesThatFit() throws {
        let harness = try EngineHarness()
        let name = String(repeating: "p", count: 254)
        try SystemCall.writeNewFile(harness.layout.new + "/" + name, Array("page".utf8), sync: false)
        let file = WrittenFile(try #require(try SystemCall.linkStatus(harness.layout.new + "/" + name)))
        let aside = try #require(try harness.spool.setAside(drop: name, file: file))
        let parts = try harness.spool.split(drop: aside, into: [Array("one".utf8), Array("two".utf8)])
        #expect(parts.count == 2)
        #expect(parts.allSatisfy { $0.utf8.count <= 255 })
        #expect(harness.names(in: "new").sorted() == parts.sorted())
    }
}

@Suite
struct IntakeBacklogTests {
    private let full = SpoolError("create", "/spool/rejected/x.reason", ENOSPC)
    private let broken = SpoolError("read", "/spool/new/x", EIO)

    private func failures(_ errors: SpoolError...) -> IntakeBacklog.Failures {
        var failures = IntakeBacklog.Failures()
        for error in errors { failures.record(error) }
        return failures
    }

    @Test func lackOfSpacePausesIntakeAndASuccessfulScanResumesIt() {
        var backlog = IntakeBacklog()
        let paused = backlog.finished(failures(full), fullScan: false, now: .seconds(10))
        #expect(paused == .paused(reason: "the spool's file system refused a write (\(full))"))
        #expect(backlog.isPaused)
        #expect(backlog.finished(IntakeBacklog.Failures(), fullScan: false, now: .seconds(11)) == nil,
                "a batch is not a scan of all of new/")
        #expect(backlog.finished(IntakeBacklog.Failures(), fullScan: true, now: .seconds(15)) == .resumed(after: .seconds(5)))
        #expect(!backlog.isPaused)
        #expect(backlog.nextWakeUp == nil)
    }

    @Test func otherFailuresScheduleARescanWithoutPausing() {
        var backlog = IntakeBacklog()
        #expect(backlog.finished(failures(broken), fullScan: false, now: .seconds(10)) == nil)
        #expect(!backlog.isPaused)
        #expect(backlog.nextWakeUp == .seconds(11))
    }

    @Test func retriesBackOffFromOneSecondToThirty() {
        var backlog = IntakeBacklog()
        var waits: [Duration] = []
        var now = Duration.seconds(0)
        for _ in 0..<7 {
            _ = backlog.finished(failures(full), fullScan: true, now: now)
            let next = backlog.nextWakeUp!
            waits.append(next - now)
            now = next
        }
        #expect(waits == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
    }

    @Test func anUnsettledFileIsDueAfterTheSettleTime() {
        var backlog = IntakeBacklog()
        backlog.deferFile("x", now: .seconds(10))
        #expect(backlog.dueFiles(now: .seconds(11)) == [])
        #expect(backlog.nextWakeUp == .seconds(10) + IntakeBacklog.settleTime)
        #expect(backlog.dueFiles(now: .seconds(10) + IntakeBacklog.settleTime) == ["x"])
        #expect(backlog.nextWakeUp == nil)
    }

    @Test func aFileWrittenInPlaceWaitsForItsWriterUpToTheInPlaceLimit() {
        var backlog = IntakeBacklog()
        backlog.deferFile("scanned", now: .seconds(10))
        backlog.deferFile("created", now: .seconds(10), inPlace: true)
        #expect(backlog.settleWindow(for: "scanned") == IntakeBacklog.settleTime)
        #expect(backlog.settleWindow(for: "created") == IntakeBacklog.inPlaceLimit)
        #expect(backlog.dueFiles(now: .seconds(10) + IntakeBacklog.settleTime) == ["created", "scanned"])
        #expect(backlog.isWrittenInPlace("created"), "known until it is taken")
        backlog.forget("created")
        #expect(!backlog.isWrittenInPlace("created"))
        #expect(backlog.settleWindow(for: "created") == IntakeBacklog.settleTime)
    }
}
