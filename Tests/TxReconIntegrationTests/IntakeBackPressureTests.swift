// Intake against an engine that is full (too many keys pending), in-process
// with real inotify and threads: drops wait in new/, the operator's ctl/
// requests are still answered, and new/ is read again once there is room;
// during the scan of a backlog, a request waits for one batch, not for all;
// a request waiting at start is executed after READY=1, and a replay stops
// copying once the engine can queue no more.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(2)))
struct IntakeBackPressureTests {
    /// An engine of three pending keys at most and one attempt at a time,
    /// which hangs, and an intake started on more than one batch of drops
    /// (it hands over 256 at a time): the start-up scan's first batch fills
    /// the engine, and intake waits (on the engine's manual clock) for room
    /// that does not come, the second batch in new/. Stop the intake.
    private func fullEngine() async throws -> (harness: EngineHarness, intake: Intake, count: Int) {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 0,
                                               inboxWindowWait: .seconds(1), highWater: 3, lowWater: 2)
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let count = Intake.batchSize + 44
        for index in 1...count { _ = try harness.envelope("k\(index)", version: 1, name: "d\(index)") }
        let intake = Intake(spool: harness.spool, engine: engine, watcher: try InboxWatcher(layout: harness.layout),
                            settings: Intake.Settings(maximumFileSize: 1 << 20, acceptEnvelopes: true, verification: nil),
                            log: harness.log)
        let ready = Mutex(false)
        try intake.start(ready: { ready.withLock { $0 = true } }, lost: { Issue.record("intake lost: \($0)") })
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))
        harness.clock.advance(by: .seconds(1))
        #expect(await eventually { ready.withLock { $0 } })
        #expect(await eventually { harness.names(in: "queue").count == Intake.batchSize })
        #expect(harness.names(in: "new").count == 44, "the second batch waits in new/")
        return (harness, intake, count)
    }

    @Test func whileTheEngineIsFullControlRequestsAreAnsweredAndDropsWaitInNew() async throws {
        let (harness, intake, count) = try await fullEngine()
        defer { intake.stop() }

        // An operator request is executed meanwhile.
        let request = ControlRequest(.retry, all: true).json.serialized
        try SystemCall.writeNewFile(harness.layout.ctl + "/r1", request, sync: false)
        #expect(await eventually { harness.exists("ctl/r1.result") }, "answered while the engine is full")

        // Deliveries make room; below the low-water mark intake reads new/
        // again and every drop is delivered.
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == count }
        #expect(harness.names(in: "new").isEmpty)
        #expect(harness.names(in: "queue").isEmpty)
    }

    /// A file created in place while intake waits for room is remembered
    /// as such, so the scan made once there is room leaves it to its
    /// writer, however long the writer pauses, rather than reject half of it.
    @Test func aFileWrittenInPlaceWhileTheEngineIsFullWaitsForItsWriter() async throws {
        let (harness, intake, count) = try await fullEngine()
        defer { intake.stop() }

        let bytes = Array(#"{"id":"paused","version":1,"payload":{}}"#.utf8)
        let writer = open(harness.layout.new + "/paused-writer", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
        #expect(writer >= 0)
        _ = write(writer, bytes, bytes.count / 2)
        // Twice the settle time a file found by a scan gets: the writer
        // pausing is the case under test, not a wait for intake.
        try await Task.sleep(for: .seconds(2) * Int(IntakeBacklog.settleTime.components.seconds))
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == count }
        #expect(harness.names(in: "rejected").isEmpty, "half a file is not rejected while its writer holds it")
        #expect(harness.names(in: "new") == ["paused-writer"])

        _ = bytes[(bytes.count / 2)...].withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        close(writer)
        await harness.status.waitFor { $0.delivered == count + 1 }
        #expect(harness.names(in: "rejected").isEmpty)
    }

    @Test func aRequestWrittenDuringTheScanOfABacklogIsExecutedBeforeTheNextBatch() async throws {
        // A window of one batch and one attempt at a time, which hangs: the
        // start-up scan's first batch fills the window, and intake waits (on
        // the engine's manual clock) for room before the next of four.
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: Intake.batchSize,
                                               inboxWindowWait: .seconds(1))
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let count = Intake.batchSize * 4
        for index in 1...count { _ = try harness.envelope("k\(index)", version: 1, name: "d\(index)") }
        let intake = Intake(spool: harness.spool, engine: engine, watcher: try InboxWatcher(layout: harness.layout),
                            settings: Intake.Settings(maximumFileSize: 1 << 20, acceptEnvelopes: true, verification: nil),
                            log: harness.log)
        try intake.start(ready: {}, lost: { Issue.record("intake lost: \($0)") })
        defer { intake.stop() }
        await harness.transport.waitForRequests(1)
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))

        // The operator asks while the scan waits; the backend then fails
        // every attempt, which empties the window into queue/ and keeps
        // every key pending, so the request's answer names what was pending
        // when it ran.
        let request = ControlRequest(.retry, all: true).json.serialized
        try SystemCall.writeNewFile(harness.layout.ctl + "/r1", request, sync: false)
        harness.transport.setDefault(.status(503))
        harness.transport.releaseHeld(with: .status(503))
        #expect(await eventually { harness.exists("ctl/r1.result") })
        let answer = try #require(ControlResult(json: try SystemCall.readFile(harness.layout.ctl + "/r1.result",
                                                                             limit: 1 << 20)))
        let named = answer.applied.count + answer.skipped.count
        #expect(named == Intake.batchSize, "executed after the first batch, before the second: it named \(named)")
        // The scan went on after the request: every drop is taken.
        await harness.status.waitFor { $0.queued == count }
    }

    private func intake(on harness: EngineHarness, _ engine: DeliveryEngine) throws -> Intake {
        Intake(spool: harness.spool, engine: engine, watcher: try InboxWatcher(layout: harness.layout),
               settings: Intake.Settings(maximumFileSize: 1 << 20, acceptEnvelopes: true, verification: nil),
               log: harness.log)
    }

    /// A request left in ctl/ while the daemon was stopped (a replay of
    /// all of done/ can take minutes) must not hold back READY=1: systemd
    /// would kill the start, and the request, not yet removed, would run
    /// again at every restart.
    @Test func aRequestWaitingAtStartIsExecutedAfterReady() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        try SystemCall.writeNewFile(harness.layout.ctl + "/r1", ControlRequest(.retry, all: true).json.serialized,
                                    sync: false)
        let answeredAtReady = Mutex<Bool?>(nil)
        let result = harness.layout.ctl + "/r1.result"
        let intake = try intake(on: harness, engine)
        try intake.start(ready: { answeredAtReady.withLock { $0 = access(result, F_OK) == 0 } },
                         lost: { Issue.record("intake lost: \($0)") })
        defer { intake.stop() }
        #expect(await eventually { harness.exists("ctl/r1.result") }, "answered after start")
        #expect(answeredAtReady.withLock { $0 } == false, "READY=1 came before the request ran")
    }

    /// A replay of more than the engine can queue copies one batch at most:
    /// copying the rest (an fsync each) only to discard it kept intake
    /// from new/ for nothing.
    @Test(.enabled(if: getuid() == 0, "a replay is root's to ask for"))
    func aReplayBeyondTheHighWaterMarkCopiesNoMoreThanItCanQueue() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 0,
                                               inboxWindowWait: .seconds(1), highWater: 3, lowWater: 2)
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let count = ControlChannel.replayBatch * 2 + 10
        for index in 1...count {
            let text = #"{"id":"k\#(index)","version":1,"payload":{}}"#
            try SystemCall.writeNewFile(harness.layout.done + "/k\(index)", Array(text.utf8), sync: false)
        }
        let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        #expect(watch >= 0 && inotify_add_watch(watch, harness.layout.queue, UInt32(IN_CREATE)) >= 0)
        defer { close(watch) }
        try SystemCall.writeNewFile(harness.layout.ctl + "/r1", ControlRequest(.replay, all: true).json.serialized,
                                    mode: 0o640, sync: false)
        let intake = try intake(on: harness, engine)
        try intake.start(ready: {}, lost: { Issue.record("intake lost: \($0)") })
        defer { intake.stop() }
        #expect(await eventually(timeout: .seconds(60)) { harness.exists("ctl/r1.result") })
        let answer = try #require(ControlResult(json: try SystemCall.readFile(harness.layout.ctl + "/r1.result",
                                                                             limit: 1 << 20)))
        #expect(answer.applied.count == 3, "the high-water mark")
        #expect(answer.skipped.count == count - 3
                && answer.skipped.allSatisfy { $0.reason.contains("high-water mark") })
        var copies = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let length = read(watch, &buffer, buffer.count)
            guard length > 0 else { break }
            var offset = 0
            while offset < length {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let name = String(decoding: buffer[nameStart..<(nameStart + Int(event.len))].prefix { $0 != 0 },
                                  as: UTF8.self)
                if name.hasPrefix(".tmp-replay-") { copies += 1 }
                offset = nameStart + Int(event.len)
            }
        }
        #expect(copies > 0 && copies <= ControlChannel.replayBatch, "copied \(copies) of \(count)")
    }
}
