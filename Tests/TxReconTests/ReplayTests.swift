// `txrecon replay` below the command line: the request's window on the
// wire, the selection of delivered snapshots in done/, and their copy back
// into queue/ on the pending items, without an engine.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReplayTests {
    let directory = TemporaryDirectory("txrecon-replay")
    let log = RecordingLogSink()
    var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }
    var spool: Spool { Spool(layout: layout) }
    var commands: OperatorCommands { OperatorCommands(spool: spool, events: ItemEvents(sink: log)) }

    /// done/KEY as a delivery leaves it, written by its producer at `receivedAt` (ms).
    func delivered(_ key: String, receivedAt: Int64) throws {
        try layout.createMissingDirectories()
        let name = try #require(ItemKey(key)).fileName
        _ = directory.write(#"{"id":"\#(key)","version":3,"payload":{}}"#, to: "spool/done/\(name)")
        let time = timespec(tv_sec: Int(receivedAt / 1000), tv_nsec: Int(receivedAt % 1000) * 1_000_000)
        var times = [time, time]
        #expect(utimensat(AT_FDCWD, layout.done + "/" + name, &times, 0) == 0)
    }

    @Test func aReplayRequestCarriesItsWindowAndAnOlderOneHasNone() throws {
        let request = ControlRequest(.replay, targets: ["k"], since: 1_000, until: 2_000)
        #expect(ControlRequest(json: request.json.serialized) == request)
        let plain = ControlRequest(.retry, targets: ["k"])
        #expect(ControlRequest(json: plain.json.serialized) == plain)
        #expect(plain.json["since"] == nil)
        #expect(ControlRequest(json: Array(#"{"command":"replay","targets":[],"all":true,"since":"soon"}"#.utf8)) == nil,
                "a window that is not a number is not a request")
    }

    @Test func theSelectionIsTheDeliveredSnapshotsInTheWindowOldestFirst() throws {
        try delivered("late", receivedAt: 3_000_000)
        try delivered("early", receivedAt: 1_000_000)
        try delivered("a.b", receivedAt: 2_000_000)
        _ = directory.write("{}", to: "spool/done/early.state")
        _ = directory.write("{}", to: "spool/done/late.superseded-2")
        let all = try spool.deliveredSnapshots(of: nil, since: nil, until: nil)
        #expect(all.found.map(\.key.rawValue) == ["early", "a.b", "late"], "failure records and superseded left out")
        #expect(all.found.map(\.receivedAt) == [1_000_000, 2_000_000, 3_000_000])
        let window = try spool.deliveredSnapshots(of: nil, since: 2_000_000, until: 3_000_000)
        #expect(window.found.map(\.key.rawValue) == ["a.b"], "since is inclusive, until is not")
        let named = try spool.deliveredSnapshots(of: [try #require(ItemKey("late")), try #require(ItemKey("never"))],
                                                 since: nil, until: nil)
        #expect(named.found.map(\.key.rawValue) == ["late"] && named.missing.map(\.rawValue) == ["never"])
    }

    @Test func aReplayedSnapshotIsCopiedIntoQueueDueNowAndDoneKeepsIt() throws {
        try delivered("k1", receivedAt: 1_500_000)
        var pending = PendingItems()
        let snapshots = try spool.deliveredSnapshots(of: nil, since: nil, until: nil).found
            .map { snapshot throws(SpoolError) in try spool.stageReplay(snapshot, maximumSize: 1 << 20) }  // as intake does
        let (result, queued) = commands.replay(snapshots, on: &pending, now: .seconds(9), wall: 1_800_000_000_000,
                                              limit: 100)
        #expect(result.applied == ["k1"] && queued == 1)
        let key = try #require(ItemKey("k1"))
        let entry = try #require(pending.entries[key])
        #expect(entry.deadline == .seconds(9) && entry.receivedAt == 1_500_000)
        #expect(entry.state == DeliveryState(replayedAt: 1_800_000_000_000), "a stream sends it under a new message id")
        #expect(try SystemCall.readFile(layout.queue + "/k1", limit: 4096)
                == SystemCall.readFile(layout.done + "/k1", limit: 4096))
        // A restart finds it queued with the producer's time, not the
        // replay's, and still a replay.
        let restored = try spool.restoreQueue().items
        #expect(restored.map(\.key) == [key] && restored.first?.receivedAt == 1_500_000)
        #expect(restored.first?.state?.replayedAt == 1_800_000_000_000)
        #expect(log.entries.contains { $0.messageID == MessageID.replayed })
    }

    /// done/KEY grown past MaxFileSize= (a producer kept a descriptor to
    /// the file it dropped) is not read whole into the daemon's memory.
    @Test func aDeliveredFileLargerThanMaxFileSizeIsNotCopied() throws {
        try delivered("grown", receivedAt: 1_000)
        let snapshot = DeliveredSnapshot(key: try #require(ItemKey("grown")), receivedAt: 1_000)
        let size = try SystemCall.readFile(layout.done + "/grown", limit: 4096).count
        #expect(throws: SpoolError("read", layout.done + "/grown", EFBIG)) {
            try spool.stageReplay(snapshot, maximumSize: size - 1)
        }
        #expect(try SystemCall.listDirectory(layout.queue).isEmpty, "no copy, not even a temporary")
        _ = try spool.stageReplay(snapshot, maximumSize: size)
    }

    @Test func aKeyQueuedOrHeldIsLeftAloneAndTheHighWaterMarkIsKept() throws {
        for key in ["queued", "held", "one", "two"] { try delivered(key, receivedAt: 1_000) }
        var pending = PendingItems()
        pending.add(try #require(ItemKey("queued")), PendingItems.Entry(state: DeliveryState(), deadline: .zero,
                                                                         receivedAt: 0))
        pending.held.insert(try #require(ItemKey("held")))
        let snapshots = try ["queued", "held", "one", "two"].map {
            try spool.stageReplay(DeliveredSnapshot(key: try #require(ItemKey($0)), receivedAt: 1_000), maximumSize: 1 << 20)  // as intake does
        }
        let result = commands.replay(snapshots, on: &pending, now: .zero, wall: 1_800_000_000_000, limit: 2).result
        #expect(result.applied == ["one"])
        #expect(try SystemCall.listDirectory(layout.queue).sorted() == ["one", "one.state"],
                "the copies not taken are removed; the one taken has its replay recorded")
        #expect(result.skipped.map(\.target) == ["queued", "held", "two"])
        #expect(result.skipped[0].reason == "queued: its pending snapshot is delivered anyway")
        #expect(result.skipped[1].reason == "held: use release")
        #expect(result.skipped[2].reason.hasPrefix("the queue holds 2 items, its high-water mark"))
        #expect(try !SystemCall.listDirectory(layout.queue).contains("two"))
    }

    @Test func aKeyDeliveredAgainWhileTheCopyWasMadeIsNotReplayed() throws {
        // The copy is of version 3; the engine then delivers version 4 onto
        // done/k. Queued, the copy would reach the backend after the newer one.
        try delivered("k", receivedAt: 1_000)
        let key = try #require(ItemKey("k"))
        let staged = try spool.stageReplay(DeliveredSnapshot(key: key, receivedAt: 1_000), maximumSize: 1 << 20)
        _ = directory.write(#"{"id":"k","version":4,"payload":{}}"#, to: "spool/queue/k")
        try SystemCall.rename(layout.queue + "/k", layout.done + "/k")
        var pending = PendingItems()
        let result = commands.replay([staged], on: &pending, now: .zero, wall: 1_800_000_000_000, limit: 100).result
        #expect(result.applied.isEmpty && pending.entries.isEmpty)
        #expect(result.skipped.first?.reason.hasPrefix("delivered again while the replay was copied") == true)
        #expect(try SystemCall.listDirectory(layout.queue).isEmpty, "the stale copy is removed, not queued")
        #expect(try SystemCall.readFile(layout.done + "/k", limit: 4096) == Array(#"{"id":"k","version":4,"payload":{}}"#.utf8))
    }

    /// A pending entry of `key`, in flight, as the engine has it while an attempt runs.
    func inFlight(_ key: ItemKey) -> PendingItems {
        var pending = PendingItems()
        var entry = PendingItems.Entry(state: DeliveryState(), deadline: .zero, receivedAt: 0)
        entry.inFlight = true
        pending.add(key, entry)
        return pending
    }

    @Test func aReplayOfAKeyInFlightWhoseAttemptDeliveredWhatWasCopiedIsQueuedWhenTheAttemptHasEnded() throws {
        // The attempt renamed its snapshot onto done/k; the engine has not
        // yet learnt that it ended when the replay, asked for after the
        // operator saw k in done/, arrives.
        try delivered("k", receivedAt: 1_000)
        let key = try #require(ItemKey("k"))
        var pending = inFlight(key)
        let staged = try spool.stageReplay(DeliveredSnapshot(key: key, receivedAt: 1_000), maximumSize: 1 << 20)
        let (answer, queued) = commands.replay([staged], on: &pending, now: .zero, wall: 1_800_000_000_000, limit: 100)
        #expect(answer.applied == ["k"] && answer.skipped.isEmpty && queued == 0, "answered, decided later")
        #expect(pending.replaysAwaitingAttempt[key] == staged)
        #expect(try !SystemCall.listDirectory(layout.queue).contains("k"), "not queued beside the attempt")

        // The engine performs the attempt's fate (delivered), then decides.
        pending.forget(key)
        let replayed = commands.replayAwaitingAttempt(of: key, on: &pending, now: .seconds(3), wall: 1_800_000_000_000,
                                                      limit: 100)
        #expect(replayed && pending.replaysAwaitingAttempt.isEmpty)
        #expect(pending.entries[key]?.deadline == .seconds(3) && pending.entries[key]?.inFlight == false)
        #expect(try SystemCall.readFile(layout.queue + "/k", limit: 4096) == SystemCall.readFile(layout.done + "/k", limit: 4096))
        #expect(log.entries.contains { $0.messageID == MessageID.replayed })
        #expect(!commands.replayAwaitingAttempt(of: key, on: &pending, now: .seconds(4), wall: 0, limit: 100),
                "decided once")
    }

    @Test func aReplayThatWaitedForAnAttemptWhichFailedOrDeliveredANewerSnapshotIsNotQueuedAndSaysWhy() throws {
        try delivered("k", receivedAt: 1_000)
        let key = try #require(ItemKey("k"))

        // The attempt failed: its snapshot is pending again and goes out anyway.
        var pending = inFlight(key)
        let first = try spool.stageReplay(DeliveredSnapshot(key: key, receivedAt: 1_000), maximumSize: 1 << 20)
        _ = commands.replay([first], on: &pending, now: .zero, wall: 1_800_000_000_000, limit: 100)
        pending.entries[key]?.inFlight = false
        #expect(!commands.replayAwaitingAttempt(of: key, on: &pending, now: .zero, wall: 0, limit: 100))
        #expect(try SystemCall.listDirectory(layout.queue).isEmpty, "the copy is removed")
        #expect(log.entries.last?.message == "k: the replay asked for while it was being delivered is not queued: "
                + "queued: its pending snapshot is delivered anyway")

        // The attempt delivered version 4 onto done/k after the copy of 3 was made.
        pending.entries[key]?.inFlight = true
        let second = try spool.stageReplay(DeliveredSnapshot(key: key, receivedAt: 1_000), maximumSize: 1 << 20)
        _ = commands.replay([second], on: &pending, now: .zero, wall: 1_800_000_000_000, limit: 100)
        _ = directory.write(#"{"id":"k","version":4,"payload":{}}"#, to: "spool/queue/k")
        try SystemCall.rename(layout.queue + "/k", layout.done + "/k")
        pending.forget(key)
        #expect(!commands.replayAwaitingAttempt(of: key, on: &pending, now: .zero, wall: 0, limit: 100))
        #expect(pending.entries.isEmpty && pending.replaysAwaitingAttempt.isEmpty)
        #expect(try SystemCall.listDirectory(layout.queue).isEmpty)
        #expect(log.entries.last?.message.hasSuffix("is not queued: delivered again while the replay was copied from "
                                                   + "done/: the destination has its newest snapshot") == true)
    }

    /// A replay's staged copy and a failure record are written on two
    /// threads (intake, the engine); their temporary names must differ for
    /// every pair of keys, here `k` and the envelope key `replay-k`.
    @Test func aStagedCopyAndAnotherKeysFailureRecordNeverShareATemporaryName() throws {
        try delivered("k", receivedAt: 1_000_000)
        let staged = try spool.stageReplay(DeliveredSnapshot(key: try #require(ItemKey("k")), receivedAt: 1_000_000), maximumSize: 1 << 20)
        try spool.writeState(DeliveryState(), for: try #require(ItemKey("replay-k")))
        try spool.commitReplay(staged.key)
        #expect(try SystemCall.readFile(layout.queue + "/k", limit: 1 << 10).starts(with: Array(#"{"id":"k""#.utf8)))
        #expect(access(layout.queue + "/replay-k.state", F_OK) == 0)
    }
}
