// done/ cleanup after DoneRetention=, on real files; the scan is told what
// time it is, so nothing waits for real.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct DoneReaperTests {
    let directory = TemporaryDirectory("txrecon-done")

    func names() -> [String] { ((try? SystemCall.listDirectory(directory.path)) ?? []).sorted() }

    @Test func nothingIsRemovedBeforeTheRetentionAndTheNextScanIsArmed() throws {
        _ = directory.write("x", to: "a")
        let now = Timestamp.nowMilliseconds()
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), log: RecordingLogSink())
        reaper.reap(asOf: now)
        #expect(names() == ["a"])
        let next = try #require(reaper.nextScanAt)
        #expect(next >= now + 3_600_000 - 1000 && next <= now + 3_600_000 + 1000)
        reaper.stop()
    }

    @Test func everythingPastTheRetentionIsRemovedAndNothingStaysArmed() {
        _ = directory.write("x", to: "a")
        _ = directory.write("x", to: "b.superseded-1-2")
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), log: RecordingLogSink())
        reaper.reap(asOf: Timestamp.nowMilliseconds() + 7_200_000)
        #expect(names() == [])
        #expect(reaper.nextScanAt == nil)
    }

    /// A file's mtime is its producer's (`cp -p` from a host whose clock
    /// runs ahead): it goes a retention after its move into done/, and the
    /// next delivery's removal is armed for its own time, not after it.
    @Test func aProducersMtimeYearsAheadNeitherKeepsAFileNorPutsOffTheNext() throws {
        _ = directory.write("x", to: "a")
        let now = Timestamp.nowMilliseconds()
        let ahead = timespec(tv_sec: Int((now + 10 * 365 * 86_400_000) / 1000), tv_nsec: 0)
        var times = [ahead, ahead]
        #expect(utimensat(AT_FDCWD, directory.path + "/a", &times, 0) == 0)
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), log: RecordingLogSink())
        defer { reaper.stop() }
        reaper.reap(asOf: now + 7_200_000)
        #expect(names() == [], "gone a retention after its move into done/")
        _ = directory.write("x", to: "b")
        reaper.observe(finished: 1)
        #expect(try #require(reaper.nextScanAt) <= now + 3_600_000 + 60_000)
    }

    /// A scan made while the wall clock ran years ahead (then stepped back)
    /// must not put the next one off by its minimum interval counted from
    /// then: done/ would grow until a restart.
    @Test func aScanMadeWhileTheClockRanAheadDoesNotPutTheNextOff() throws {
        _ = directory.write("x", to: "a")
        let now = Timestamp.nowMilliseconds()
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), durableThrough: { 0 },
                                log: RecordingLogSink())
        defer { reaper.stop() }
        reaper.reap(asOf: now + 10 * 365 * 86_400_000)
        #expect(names() == ["a"], "not in the ledger yet")
        reaper.observe(finished: 1)
        #expect(try #require(reaper.nextScanAt) <= now + 3_600_000 + 60_000)
    }

    /// The ledger is done/'s successor: a delivered snapshot the ledger has
    /// not durably recorded stays, whatever its age, so that the ledger's
    /// catch-up can still read it; superseded snapshots and failure records
    /// are no confirmations and go at their time.
    @Test func aDeliveryTheLedgerDoesNotDurablyHoldStaysPastTheRetention() throws {
        _ = directory.write("x", to: "a")
        _ = directory.write("x", to: "b.superseded-1-2")
        _ = directory.write("x", to: "a.state")
        let changed = try #require(try SystemCall.linkStatus(directory.path + "/a"))
        let changedAt = Int64(changed.st_ctim.tv_sec) * 1000 + Int64(changed.st_ctim.tv_nsec) / 1_000_000
        let watermark = Mutex<Int64>(changedAt - 1)
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600),
                                durableThrough: { watermark.withLock { $0 } }, log: RecordingLogSink())
        let later = Timestamp.nowMilliseconds() + 7_200_000
        reaper.reap(asOf: later)
        #expect(names() == ["a"], "past the retention, but moved into done/ after the ledger's watermark")
        #expect(reaper.nextScanAt != nil, "looked at again later")
        watermark.withLock { $0 = changedAt + 1 }
        reaper.reap(asOf: later)
        #expect(names() == [])
        reaper.stop()
    }

    /// DoneRetention=0 keeps a delivered snapshot only until the ledger
    /// holds it, never "at once": until then done/ is the supersede rule's
    /// only record of it (an older snapshot arriving meanwhile must find it).
    @Test func withNoRetentionADeliveryStaysUntilTheLedgerDurablyHoldsIt() throws {
        _ = directory.write("x", to: "a")
        _ = directory.write("x", to: "b.superseded-1-2")
        let changed = try #require(try SystemCall.linkStatus(directory.path + "/a"))
        let changedAt = Int64(changed.st_ctim.tv_sec) * 1000 + Int64(changed.st_ctim.tv_nsec) / 1_000_000
        let watermark = Mutex<Int64>(changedAt - 1)
        let reaper = DoneReaper(directory: directory.path, retention: .zero,
                                durableThrough: { watermark.withLock { $0 } }, log: RecordingLogSink())
        let now = Timestamp.nowMilliseconds()
        reaper.reap(asOf: now)
        #expect(names() == ["a"], "the ledger does not hold it yet; the superseded snapshot goes at once")
        watermark.withLock { $0 = changedAt + 1 }
        reaper.reap(asOf: now)
        #expect(names() == [])
        reaper.stop()
    }

    @Test func aDeliveryMadeBetweenTheLookAndTheRemovalStays() throws {
        // The scan judged done/k (the old file) expired; a curl thread then
        // renamed a fresh delivery onto done/k. Removing by name would take
        // the supersede rule's record of that delivery with it.
        _ = directory.write("old", to: "k")
        let judged = try #require(try SystemCall.linkStatus(directory.path + "/k"))
        _ = directory.write("fresh", to: "fresh")
        try SystemCall.rename(directory.path + "/fresh", directory.path + "/k")
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), log: RecordingLogSink())
        reaper.removeDelivery("k", judged: judged)
        #expect(names() == ["k"])
        #expect(try SystemCall.readFile(directory.path + "/k", limit: 64) == Array("fresh".utf8))

        let expired = try #require(try SystemCall.linkStatus(directory.path + "/k"))
        reaper.removeDelivery("k", judged: expired)
        #expect(names() == [], "the file judged expired goes")
    }

    /// At start, before the ledger's catch-up and the engine read done/,
    /// without a scan (which would also remove what expired).
    @Test func whatTheLastProcessLeftAsideIsPutBackBeforeAnythingReadsDone() throws {
        _ = directory.write("left aside", to: DoneReaper.asidePrefix + "a")
        _ = directory.write("expired", to: "old.superseded-1-2")
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(0), log: RecordingLogSink())
        reaper.putBackLeftAside()
        #expect(names() == ["a", "old.superseded-1-2"])
        #expect(reaper.nextScanAt == nil, "no scan was armed")
    }

    @Test func aDeliveryLeftAsideIsPutBackByTheNextScanUnlessAFresherOneTookItsName() throws {
        // A crash between the rename aside and the put-back.
        _ = directory.write("left aside", to: DoneReaper.asidePrefix + "a")
        _ = directory.write("left aside", to: DoneReaper.asidePrefix + "b")
        _ = directory.write("fresher", to: "b")
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), log: RecordingLogSink())
        reaper.reap(asOf: Timestamp.nowMilliseconds())
        #expect(names() == ["a", "b"])
        #expect(try SystemCall.readFile(directory.path + "/a", limit: 64) == Array("left aside".utf8))
        #expect(try SystemCall.readFile(directory.path + "/b", limit: 64) == Array("fresher".utf8))
        reaper.stop()
    }
}
