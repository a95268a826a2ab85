// receipts/ cleanup: a receipt goes once it has not been used for
// DoneRetention= and nothing pending, held or rejected names it; on real
// files, the scan told what time it is, so nothing waits for real.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptReaperTests {
    let directory = TemporaryDirectory("txrecon-receipts")
    var layout: SpoolLayout { SpoolLayout(root: directory.path) }
    static let hour: Int64 = 3_600_000
    static let name = String(repeating: "ab", count: 32)

    init() throws {
        try SpoolLayout(root: directory.path).createMissingDirectories()
        _ = directory.write("a receipt", to: "receipts/" + Self.name)
    }

    func reaper(retention: Duration = .seconds(3600)) -> ReceiptReaper {
        ReceiptReaper(layout: layout, retention: retention, log: RecordingLogSink())
    }

    func receipts() -> [String] { ((try? SystemCall.listDirectory(layout.receipts)) ?? []).sorted() }

    /// A part naming the receipt, in `directory` of the spool.
    func part(in directory: String, named fileName: String = "1000000000000001") {
        _ = self.directory.write(#"{"receiptSha256":"\#(Self.name)","txreconReceiptEntry":"1000000000000001"}"#,
                                 to: directory + "/" + fileName)
    }

    @Test func aReceiptNothingNamesGoesOnceUnusedForTheRetentionAndNotBefore() throws {
        let reaper = reaper()
        let now = Timestamp.nowMilliseconds()
        reaper.reap(asOf: now + Self.hour / 2)
        #expect(receipts() == [Self.name])
        let next = try #require(reaper.nextScanAt, "armed for when it may go")
        #expect(next >= now + Self.hour - 1000 && next <= now + Self.hour + 1000)
        reaper.reap(asOf: now + Self.hour + 1000)
        #expect(receipts() == [])
        #expect(reaper.nextScanAt == nil, "nothing left, nothing armed")
    }

    @Test(arguments: ["new", "queue", "hold", "rejected"])
    func aReceiptAPartNamesIsKeptHoweverOld(_ place: String) throws {
        part(in: place)
        let reaper = reaper()
        let now = Timestamp.nowMilliseconds()
        reaper.reap(asOf: now + 30 * 24 * Self.hour)
        #expect(receipts() == [Self.name], "named by a part in \(place)/")
        #expect(reaper.nextScanAt != nil)
        reaper.stop()
        try SystemCall.unlinkIfPresent(directory.path + "/" + place + "/1000000000000001")
        // Its use was noted when it was found named: a retention from then.
        reaper.reap(asOf: Timestamp.nowMilliseconds() + Self.hour + 1000)
        #expect(receipts() == [])
    }

    @Test func filesThatAreNotPartsKeepNothing() throws {
        _ = directory.write(String(repeating: "x", count: ReceiptReaper.partLimit + 1), to: "queue/big")
        _ = directory.write(#"{"id":"\#(Self.name)","version":1,"payload":{}}"#, to: "queue/envelope")
        _ = directory.write(#"{"receiptSha256":"\#(Self.name)"}"#, to: "hold/k.reason")
        reaper().reap(asOf: Timestamp.nowMilliseconds() + Self.hour + 1000)
        #expect(receipts() == [])
    }

    @Test func withoutRetentionAReceiptIsStillKeptForTheMinimumAge() throws {
        let reaper = reaper(retention: .zero)
        let now = Timestamp.nowMilliseconds()
        reaper.reap(asOf: now + ReceiptReaper.minimumAge / 2)
        #expect(receipts() == [Self.name], "a split may still be writing its parts in tmp/")
        reaper.reap(asOf: now + ReceiptReaper.minimumAge + 1000)
        #expect(receipts() == [])
    }

    @Test func aReceiptUsedBetweenTheLookAndTheRemovalStays() throws {
        // The scan judged it unused; intake then stored an identical upload
        // (or a purchase of it was delivered), which touched it.
        let path = layout.receipts + "/" + Self.name
        var old = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &old, 0) == 0)
        let judged = try #require(try SystemCall.linkStatus(path))
        #expect(try SystemCall.touch(path))
        let reaper = reaper()
        reaper.remove([(Self.name, judged)])
        #expect(receipts() == [Self.name])
        reaper.remove([(Self.name, try #require(try SystemCall.linkStatus(path)))])
        #expect(receipts() == [], "the receipt as judged goes")
    }

    @Test(arguments: ["new", "queue", "hold", "rejected"])
    func aPartThatMovedWhileTheReaperLookedKeepsItsReceipt(_ place: String) throws {
        // The first look found no part (a requeue-rejected or a release
        // moved it from a directory not yet read into one read already);
        // it is where the second look finds it.
        let reaper = ReceiptReaper(layout: layout, retention: .seconds(3600), log: RecordingLogSink(),
                                   afterSettingAside: { [self] in part(in: place) })
        reaper.reap(asOf: Timestamp.nowMilliseconds() + Self.hour + 1000)
        #expect(receipts() == [Self.name], "named by a part in \(place)/ by the time it would have gone")
        reaper.stop()
    }

    /// A destination whose file was removed (docs/remove-destination.md)
    /// keeps its directories, and its queued parts their receipt: the file
    /// put back later finds them readable. Here "analytics" is on disk only.
    @Test(arguments: ["new", "queue", "hold"])
    func aPartOfADestinationNoLongerConfiguredKeepsItsReceipt(_ place: String) throws {
        try layout.destination("analytics").createMissingDestinationDirectories()
        part(in: "destinations/analytics/" + place)
        let reaper = reaper()
        reaper.reap(asOf: Timestamp.nowMilliseconds() + 2 * Self.hour)
        #expect(receipts() == [Self.name], "named by destinations/analytics/\(place)/")
        reaper.stop()
    }

    @Test func aReceiptAsideIsStillReadByItsParts() throws {
        let store = ReceiptStore(layout: layout)
        try SystemCall.rename(layout.receipts + "/" + Self.name, layout.receipts + "/" + ReceiptReaper.asidePrefix + Self.name)
        #expect(try store.read(Self.name) == Array("a receipt".utf8), "a reader that missed its cache finds it aside")
        #expect(try store.read(String(repeating: "cd", count: 32)) == nil)
    }

    @Test func whatACrashLeftInReceiptsIsTidiedAtStartBeforeAnythingReadsIt() throws {
        let other = String(repeating: "cd", count: 32)
        try SystemCall.rename(layout.receipts + "/" + Self.name, layout.receipts + "/" + ReceiptReaper.asidePrefix + Self.name)
        _ = directory.write("stored afresh", to: "receipts/" + other)
        _ = directory.write("left aside", to: "receipts/" + ReceiptReaper.asidePrefix + other)
        _ = directory.write("half a rece", to: "receipts/" + ReceiptStore.temporaryPrefix + "1-1")
        #expect(try ReceiptStore(layout: layout).restoreAtStart() == 1)
        #expect(receipts() == [Self.name, other].sorted())
        #expect(try SystemCall.readFile(layout.receipts + "/" + other, limit: 64) == Array("stored afresh".utf8))
    }

    @Test func aReceiptLeftAsideIsPutBackByTheNextScanUnlessStoredAfresh() throws {
        let other = String(repeating: "cd", count: 32)
        try SystemCall.rename(layout.receipts + "/" + Self.name, layout.receipts + "/" + ReceiptReaper.asidePrefix + Self.name)
        _ = directory.write("stored afresh", to: "receipts/" + other)
        _ = directory.write("left aside", to: "receipts/" + ReceiptReaper.asidePrefix + other)
        let reaper = reaper()
        reaper.reap(asOf: Timestamp.nowMilliseconds())
        #expect(receipts() == [Self.name, other].sorted())
        #expect(try SystemCall.readFile(layout.receipts + "/" + other, limit: 64) == Array("stored afresh".utf8))
        reaper.stop()
    }
}
