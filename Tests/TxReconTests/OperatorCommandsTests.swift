// The operator's release and retry on pending items and a spool in a
// temporary directory, without an engine or threads.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct OperatorCommandsTests {
    let directory = TemporaryDirectory("txrecon-commands")
    let log = RecordingLogSink()
    var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }
    var spool: Spool { Spool(layout: layout) }
    var commands: OperatorCommands { OperatorCommands(spool: spool, events: ItemEvents(sink: log)) }

    /// `key` queued, then moved to hold/ as the engine does after a refusal.
    func held(_ key: String, in pending: inout PendingItems) throws -> ItemKey {
        try layout.createMissingDirectories()
        _ = directory.write(#"{"id":"\#(key)","version":1,"payload":{}}"#, to: "spool/queue/\(key)")
        let itemKey = try #require(ItemKey(key))
        try spool.hold(itemKey, reason: "HTTP 409", at: 0, attempts: 1)
        pending.held.insert(itemKey)
        return itemKey
    }

    @Test func releaseMovesAHeldKeyBackAndMakesItDueNow() throws {
        var pending = PendingItems()
        let key = try held("h1", in: &pending)
        let result = commands.perform(ControlRequest(.release, targets: ["h1", "nope"]), on: &pending,
                                      now: .seconds(50), wall: 1_234)
        #expect(result.applied == ["h1"])
        #expect(result.skipped.map(\.target) == ["nope"] && result.skipped.map(\.reason) == ["not held"])
        #expect(!pending.held.contains(key))
        let entry = try #require(pending.entries[key])
        #expect(entry.deadline == .seconds(50) && entry.receivedAt == 1_234 && entry.state == DeliveryState())
        #expect(pending.ready.first?.key == key)
        #expect(try SystemCall.listDirectory(layout.queue).contains("h1"))
        #expect(try !SystemCall.listDirectory(layout.hold).contains("h1"))
        #expect(log.entries.contains { $0.fields.contains { $0.name == "TXRECON_OUTCOME" && $0.value == "released" } })
    }

    @Test func releaseNeverPutsAHeldSnapshotOverAQueuedOne() throws {
        var pending = PendingItems()
        let key = try held("h2", in: &pending)
        // A newer snapshot queued beside the held one.
        _ = directory.write(#"{"id":"h2","version":2,"payload":{}}"#, to: "spool/queue/h2")
        pending.add(key, PendingItems.Entry(state: DeliveryState(), deadline: .seconds(1), receivedAt: 0))
        let result = commands.perform(ControlRequest(.release, targets: ["h2"]), on: &pending, now: .seconds(2), wall: 0)
        #expect(result.applied.isEmpty)
        #expect(result.skipped.first?.reason.hasPrefix("another snapshot of it is queued") == true, "\(result.skipped)")
        let queued = try SystemCall.readFile(layout.queue + "/h2", limit: 4096)
        #expect(String(decoding: queued, as: UTF8.self).contains(#""version":2"#))
        #expect(try SystemCall.listDirectory(layout.hold).contains("h2"))
        // The spool refuses it on its own too.
        #expect(throws: SpoolError.self) { try spool.release(key) }
    }

    @Test func releasingAKeyWhoseHeldFileIsGoneForgetsItIsHeld() throws {
        var pending = PendingItems()
        let key = try held("h3", in: &pending)
        try SystemCall.rename(layout.hold + "/h3", directory.path + "/taken-by-hand")
        let result = commands.perform(ControlRequest(.release, targets: ["h3"]), on: &pending, now: .zero, wall: 0)
        #expect(result.applied.isEmpty && result.skipped.map(\.reason) == ["not held: its file is no longer in hold/"])
        #expect(!pending.held.contains(key), "status no longer counts it, and a replay is no longer refused as held")
    }

    @Test func retryMakesAWaitingKeyDueNowAndForgetsItsRecordedDelay() throws {
        try layout.createMissingDirectories()
        var pending = PendingItems()
        let key = try #require(ItemKey("w1"))
        var state = DeliveryState()
        state.attempts = 3
        state.nextAttemptAt = 99_000
        state.delayMilliseconds = 15_000
        try spool.writeState(state, for: key)
        pending.add(key, PendingItems.Entry(state: state, deadline: .seconds(90), receivedAt: 0, hasStateFile: true))
        let result = commands.perform(ControlRequest(.retry, targets: ["w1"]), on: &pending, now: .seconds(10), wall: 0)
        #expect(result.applied == ["w1"])
        let entry = try #require(pending.entries[key])
        #expect(entry.deadline == .seconds(10) && entry.state.attempts == 3 && entry.state.nextAttemptAt == nil)
        pending.dropOutdatedDeadlines()
        #expect(pending.ready.first?.deadline == .seconds(10))
        let bytes = try SystemCall.readFile(layout.queue + "/w1.state", limit: 65536)
        let stored = try #require(DeliveryState(json: bytes))
        #expect(stored.nextAttemptAt == nil && stored.attempts == 3, "a restart keeps the retry")
    }

    @Test func retrySaysWhyItCannotApply() throws {
        var pending = PendingItems()
        _ = try held("h2", in: &pending)
        let flying = try #require(ItemKey("f1"))
        var entry = PendingItems.Entry(state: DeliveryState(), deadline: .zero, receivedAt: 0)
        entry.inFlight = true
        pending.add(flying, entry)
        let result = commands.perform(ControlRequest(.retry, targets: ["h2", "f1", "gone", ""]), on: &pending,
                                      now: .zero, wall: 0)
        #expect(result.applied.isEmpty)
        #expect(result.skipped.map(\.target) == ["", "h2", "f1", "gone"])
        #expect(result.skipped.map(\.reason) == [ControlRequest.invalidTargetReason, "held: use release",
                                                 "being delivered right now", "not queued"])
    }

    @Test func retryAllMakesEveryWaitingKeyDueWithoutAnEntryPerKey() throws {
        var pending = PendingItems()
        for name in ["a", "b", "c"] {
            pending.add(try #require(ItemKey(name)),
                        PendingItems.Entry(state: DeliveryState(), deadline: .seconds(300), receivedAt: 0))
        }
        let result = commands.perform(ControlRequest(.retry, all: true), on: &pending, now: .seconds(1), wall: 0)
        #expect(result.applied == ["a", "b", "c"])
        #expect(pending.entries.allSatisfy { $0.1.deadline == .seconds(1) })
        #expect(log.entries.isEmpty, "the CLI's answer reports --all")
    }
}
