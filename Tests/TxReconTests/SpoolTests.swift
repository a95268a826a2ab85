// The spool's moves on a real temporary directory.
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct SpoolTests {
    let directory = TemporaryDirectory("txrecon-spool")
    var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }

    func makeSpool() throws -> Spool {
        try layout.createMissingDirectories()
        return Spool(layout: layout)
    }

    func names(_ subdirectory: String) -> [String] {
        ((try? SystemCall.listDirectory(layout.root + "/" + subdirectory)) ?? []).sorted()
    }

    @Test func keysBecomeFileNamesWithoutDotsAndComeBack() throws {
        for raw in ["2000001032604840", "592751ef-c1b8-47fc-929e-d62dee66df4c", "a.b/c d", "..", "é", "x%41"] {
            let key = try #require(ItemKey(raw))
            #expect(!key.fileName.contains("."))
            #expect(!key.fileName.contains("/"))
            #expect(ItemKey(fileName: key.fileName) == key)
        }
        #expect(ItemKey("2000001032604840")?.fileName == "2000001032604840")
        #expect(ItemKey("a.b/c d")?.fileName == "a%2Eb%2Fc%20d")
        #expect(ItemKey("é")?.fileName == "%C3%A9")
        #expect(ItemKey(fileName: "a.state") == nil)
        #expect(ItemKey(String(repeating: "x", count: ItemKey.maximumLength + 1)) == nil)
    }

    @Test func aProducersDropNeverReplacesAFileUnderTheSameName() throws {
        try layout.createMissingDirectories()
        _ = directory.write("acknowledged", to: "spool/new/same")
        _ = directory.write("second", to: "spool/tmp/same")
        #expect(throws: SpoolError.self) {
            try SystemCall.renameToNewName(layout.tmp + "/same", layout.new + "/same")
        }
        func text(_ path: String) throws -> String {
            String(decoding: try SystemCall.readFile(path, limit: 100), as: UTF8.self)
        }
        #expect(try text(layout.new + "/same") == "acknowledged", "the drop already there is kept")
        #expect(try text(layout.tmp + "/same") == "second", "and the one that could not take its name too")
        try SystemCall.renameToNewName(layout.tmp + "/same", layout.new + "/other")
        #expect(try text(layout.new + "/other") == "second")
        var status = stat()
        #expect(lstat(layout.new + "/other", &status) == 0 && status.st_nlink == 1, "moved, never linked")
    }

    /// The daemon's own moves into new/ (the receipt splitter's parts, on
    /// a thread of its own) are one step: a scan that reads new/ meanwhile
    /// never finds the file under two names, which it refuses as
    /// `hard-linked`. Another thread looks at the name as fast as it can
    /// while the file moves back and forth.
    @Test func theDaemonsOwnMoveNeverShowsAFileUnderTwoNames() throws {
        try layout.createMissingDirectories()
        let (from, to) = (layout.tmp + "/part", layout.new + "/part")
        _ = directory.write("a part", to: "spool/tmp/part")
        final class Watch: Sendable {
            let done = Atomic(false)
            let sawTwoNames = Atomic(false)
        }
        let watch = Watch()
        let watcher = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var status = stat()
            while !watch.done.load(ordering: .relaxed) {
                if lstat(to, &status) == 0, status.st_nlink > 1 { watch.sawTwoNames.store(true, ordering: .relaxed) }
            }
            watcher.signal()
        }
        for _ in 0..<5_000 {
            #expect(try SystemCall.renameNoReplace(from, to))
            #expect(rename(to, from) == 0)
        }
        watch.done.store(true, ordering: .relaxed)
        watcher.wait()
        let sawTwoNames = watch.sawTwoNames.load(ordering: .relaxed)
        #expect(!sawTwoNames, "seen under two names")
        _ = directory.write("taken", to: "spool/new/part")
        #expect(try !SystemCall.renameNoReplace(from, to), "a name taken is never replaced")
        #expect(try SystemCall.readFile(to, limit: 100) == Array("taken".utf8))
    }

    @Test(arguments: [EINVAL, ENOSYS])
    func whereTheFileSystemRefusesNoReplaceADropStillNeverReplacesAFile(refusal: Int32) throws {
        try layout.createMissingDirectories()
        _ = directory.write("acknowledged", to: "spool/new/same")
        _ = directory.write("second", to: "spool/tmp/same")
        let refusing: (String, String) -> Int32 = { _, _ in refusal }
        let taken = #expect(throws: SpoolError.self) {
            try SystemCall.renameToNewName(layout.tmp + "/same", layout.new + "/same", noReplace: refusing)
        }
        #expect(taken?.code == EEXIST)
        func text(_ path: String) throws -> String {
            String(decoding: try SystemCall.readFile(path, limit: 100), as: UTF8.self)
        }
        #expect(try text(layout.new + "/same") == "acknowledged", "the drop already there is kept")
        #expect(try text(layout.tmp + "/same") == "second")
        try SystemCall.renameToNewName(layout.tmp + "/same", layout.new + "/other", noReplace: refusing)
        #expect(try text(layout.new + "/other") == "second", "a free name is taken by a plain rename")
        #expect(SystemCall.isMissing(layout.tmp + "/same"))
    }

    @Test func anyOtherRefusalOfTheRenameIsAnErrorAndMovesNothing() throws {
        try layout.createMissingDirectories()
        _ = directory.write("second", to: "spool/tmp/same")
        let refused = #expect(throws: SpoolError.self) {
            try SystemCall.renameToNewName(layout.tmp + "/same", layout.new + "/other", noReplace: { _, _ in EACCES })
        }
        #expect(refused?.code == EACCES)
        #expect(SystemCall.isMissing(layout.new + "/other"))
        #expect(!SystemCall.isMissing(layout.tmp + "/same"))
    }

    @Test func statusCountsFilesInNewButNotProducersHiddenTemporaries() throws {
        _ = try makeSpool()
        for name in ["a", "b", ".writing"] {
            try SystemCall.writeNewFile(layout.new + "/" + name, Array("{}".utf8), sync: false)
        }
        #expect(try SpoolInspector(layout: layout).inboxCount() == 2)
    }

    @Test func aReadThatReachesTheStatSizeEndsWithoutAnotherRead() throws {
        // A pipe whose writer stays open: a second read would fail with
        // EAGAIN, so getting the bytes back proves there was none.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        #expect(fcntl(ends[0], F_SETFL, O_NONBLOCK) == 0)
        defer { close(ends[0]); close(ends[1]) }
        #expect(write(ends[1], "{}", 2) == 2)
        #expect(try SystemCall.readAll(ends[0], path: "pipe", limit: 1024, statSize: 2) == Array("{}".utf8))
        #expect(write(ends[1], "{}", 2) == 2)
        #expect(throws: SpoolError.self, "without a size, reading goes on to the end of file") {
            try SystemCall.readAll(ends[0], path: "pipe", limit: 1024)
        }
    }

    @Test func aFileThatChangedSizeAfterItsStatIsStillReadWhole() throws {
        let path = directory.write("0123456789", to: "grown")
        for statSize in [4, 10, 20] {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            defer { close(fd) }
            #expect(try SystemCall.readAll(fd, path: path, limit: 1024, statSize: statSize) == Array("0123456789".utf8),
                    "stat said \(statSize) bytes")
        }
    }

    @Test func readingADropRefusesWhatIsNotARegularFileWithoutOpeningIt() throws {
        let spool = try makeSpool()
        #expect(symlink("/etc/hostname", layout.new + "/link") == 0)
        #expect(mkfifo(layout.new + "/fifo", 0o600) == 0)
        #expect(mkdir(layout.new + "/dir", 0o700) == 0)
        for name in ["link", "fifo", "dir"] {
            guard case let .refused(rejection) = try spool.readDrop(name, maximumSize: 1024) else {
                Issue.record("\(name) was not refused")
                continue
            }
            #expect(rejection.code == "not-a-regular-file")
        }
    }

    @Test func readingItsOwnDropLeavesTheAccessTimeAlone() throws {
        let spool = try makeSpool()
        // relatime updates an access time older than the last change.
        let accessed = 1_000_000_000, modified = 1_500_000_000
        func writeWithOldAccessTime(_ name: String) -> String {
            let path = directory.write("{}", to: "spool/new/" + name)
            var times = [timespec(tv_sec: accessed, tv_nsec: 0), timespec(tv_sec: modified, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            return path
        }
        func accessTime(_ path: String) -> Int {
            var info = stat()
            #expect(stat(path, &info) == 0)
            return info.st_atim.tv_sec
        }
        let control = writeWithOldAccessTime("control")
        _ = try SystemCall.readFile(control, limit: 1024)
        try #require(accessTime(control) != accessed, "this file system updates access times on a plain read")
        let drop = writeWithOldAccessTime("drop")
        let file = WrittenFile(try #require(try SystemCall.linkStatus(drop)))
        #expect(try spool.readDrop("drop", maximumSize: 1024) == .bytes(Array("{}".utf8), modifiedAt: Int64(modified) * 1000,
                                                                         file: file))
        #expect(accessTime(drop) == accessed)
    }

    @Test func aDropLargerThanTheLimitIsRefusedUnread() throws {
        let spool = try makeSpool()
        _ = directory.write(String(repeating: "x", count: 2048), to: "spool/new/big")
        guard case let .refused(rejection) = try spool.readDrop("big", maximumSize: 1024) else {
            Issue.record("not refused")
            return
        }
        #expect(rejection.code == "too-large")
        #expect(try spool.readDrop("missing", maximumSize: 1024) == .gone)
    }

    /// A drop the daemon cannot move (here gone; a producer's directory
    /// the daemon may not write in practice) stays where it was, and no
    /// reason is left in rejected/: every retry would add one.
    @Test func aDropThatCannotBeMovedLeavesNoReasonBehind() throws {
        let spool = try makeSpool()
        for _ in 0..<3 {
            #expect(throws: SpoolError.self) {
                try spool.reject(drop: "cannot-move", because: Rejection("not-json", "junk"), at: 0)
            }
        }
        #expect(names("rejected").isEmpty)
        #expect(try spool.rejectedNames().isEmpty)
    }

    @Test func aRejectedDropKeepsItsNameAndGetsAReasonBesideIt() throws {
        let spool = try makeSpool()
        _ = directory.write("junk", to: "spool/new/x.reason")
        _ = directory.write("junk", to: "spool/new/y")
        let first = try spool.reject(drop: "x.reason", because: Rejection("not-json", "it is not JSON"), at: 0)
        let second = try spool.reject(drop: "y", because: Rejection("not-json", "it is not JSON"), at: 0)
        #expect(first == "x.reason.input")
        #expect(second == "y")
        #expect(names("rejected") == ["x.reason.input", "x.reason.input.reason", "y", "y.reason"])
        let reason = String(decoding: try SystemCall.readFile(layout.rejected + "/y.reason", limit: 4096), as: UTF8.self)
        #expect(reason.hasPrefix("not-json: it is not JSON\nfile: y\n"))
        #expect(try spool.rejectedNames().sorted() == ["x.reason.input", "y"])
    }

    @Test func aNameThatIsNotUTF8IsRenamedAndOneAlreadyGoneIsNoError() throws {
        let spool = try makeSpool()
        let raw: [UInt8] = Array("j".utf8) + [0xFF]
        let path = Array((layout.new + "/").utf8).map { CChar(bitPattern: $0) } + raw.map { CChar(bitPattern: $0) } + [0]
        let fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0o640)
        #expect(fd >= 0)
        close(fd)
        #expect(try spool.renameUndecodableDrop(raw) == "j\u{FFFD}.not-utf8")
        #expect(names("new") == ["j\u{FFFD}.not-utf8"])
        // Its producer took it away between the listing and the rename: the
        // scan goes on (it used to end intake as "the spool is not usable").
        #expect(try spool.renameUndecodableDrop(raw) == nil)
        try SystemCall.unlinkIfPresent(layout.new + "/j\u{FFFD}.not-utf8")
        #expect(rmdir(layout.new) == 0)
        #expect(throws: SpoolError.self) { try spool.renameUndecodableDrop(raw) }
    }

    @Test func aShortenedNameKeepsWhatFitsOfACharacterWithManyMarks() {
        let name = "a" + String(repeating: "\u{301}", count: 127)
        let prefix = Spool.prefix(of: name, maximumBytes: 180)
        #expect(prefix.unicodeScalars.first == "a" && prefix.utf8.count <= 180 && prefix.utf8.count >= 179,
                "\(prefix.utf8.count) bytes")
        #expect(Spool.prefix(of: "short", maximumBytes: 180) == "short")
    }

    @Test func requeueingARejectedFileMovesItBackIntoNew() throws {
        let spool = try makeSpool()
        _ = directory.write("junk", to: "spool/new/y")
        try spool.reject(drop: "y", because: Rejection("not-json", "no"), at: 0)
        #expect(try spool.requeueRejected("y") == .requeued)
        #expect(names("rejected") == [])
        #expect(names("new") == ["y"])
        #expect(try spool.requeueRejected("y") == .missing)
    }

    @Test func aFileCreatedInNewIsToldFromOneLinkedIntoIt() throws {
        let spool = try makeSpool()
        _ = directory.write("{", to: "spool/new/writing")
        #expect(spool.creationInInbox("writing") == .writtenHere)
        let old = directory.write("{}", to: "spool/tmp/old")
        var times = [timespec(tv_sec: 1_500_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, old, &times, 0) == 0)
        #expect(link(old, layout.new + "/linked") == 0)
        #expect(spool.creationInInbox("linked") == .linkedIn, "a second name")
        #expect(unlink(old) == 0)
        #expect(spool.creationInInbox("linked") == .linkedIn, "changed long after it was written")
        #expect(mkdir(layout.new + "/dir", 0o700) == 0)
        #expect(spool.creationInInbox("dir") == nil)
        #expect(spool.creationInInbox("gone") == nil)
    }

    @Test func aPageIsSplitIntoDurableDropsBeforeItIsRemoved() throws {
        let spool = try makeSpool()
        _ = directory.write("page", to: "spool/new/page")
        let aside = try #require(try spool.setAside(drop: "page", file: Self.file(spool, "page")))
        #expect(names("new") == [], "out of the producers' reach while it is split")
        let parts = try spool.split(drop: aside, into: [Array("one".utf8), Array("two".utf8)])
        #expect(parts == ["page.1", "page.2"])
        #expect(names("new") == ["page.1", "page.2"])
        #expect(names("tmp") == [] && names("receipts") == [])
    }

    static func file(_ spool: Spool, _ name: String) throws -> WrittenFile {
        WrittenFile(try #require(try SystemCall.linkStatus(spool.layout.new + "/" + name)))
    }

    @Test func aFileAProducerPutInPlaceOfADropBeingSplitIsNeverRemoved() throws {
        let spool = try makeSpool()
        _ = directory.write("examined", to: "spool/new/upload")
        let examined = try Self.file(spool, "upload")
        // Renamed over the name after intake read it, before the split.
        _ = directory.write("another", to: "spool/tmp/another")
        try SystemCall.rename(spool.layout.tmp + "/another", spool.layout.new + "/upload")
        #expect(try spool.setAside(drop: "upload", file: examined) == nil, "not the file examined: not split")
        #expect(names("new") == ["upload"] && names("receipts") == [])
        #expect(try SystemCall.readFile(spool.layout.new + "/upload", limit: 64) == Array("another".utf8))
        // Renamed over the name after it was set aside: the split removes the
        // file it set aside, not the name.
        let file = try Self.file(spool, "upload")
        let aside = try #require(try spool.setAside(drop: "upload", file: file))
        _ = directory.write("third", to: "spool/new/upload")
        _ = try spool.split(drop: aside, into: [Array("one".utf8)])
        #expect(try SystemCall.readFile(spool.layout.new + "/upload", limit: 64) == Array("third".utf8))
    }

    @Test func dropsLeftAsideByAStoppedDaemonGoBackIntoNew() throws {
        let spool = try makeSpool()
        _ = directory.write("page", to: "spool/new/page")
        _ = try #require(try spool.setAside(drop: "page", file: Self.file(spool, "page")))
        _ = directory.write("another page", to: "spool/new/page")
        #expect(try spool.restoreAsideDrops() == 1)
        #expect(names("receipts") == [])
        #expect(names("new").count == 2 && names("new").contains("page"))
    }

    @Test func splitPartsCarryTheDropsWriteTimeAsTheirOwn() throws {
        let spool = try makeSpool()
        _ = directory.write("upload", to: "spool/new/upload")
        let written: Int64 = 1_750_000_000_123
        let aside = try #require(try spool.setAside(drop: "upload", file: Self.file(spool, "upload")))
        let parts = try spool.split(drop: aside, into: [Array("one".utf8), Array("two".utf8)], modifiedAt: written)
        for (part, content) in zip(parts, ["one", "two"]) {
            let path = spool.layout.new + "/" + part
            #expect(try SystemCall.readFile(path, limit: 64) == Array(content.utf8))
            #expect(try SystemCall.linkStatus(path).map(Spool.modifiedMilliseconds) == written,
                    "the part's receivedAt is when the producer wrote the upload")
        }
    }

    @Test func restoringTheQueueRemovesLeftoversAndReadsStates() throws {
        let spool = try makeSpool()
        _ = directory.write("item", to: "spool/queue/a")
        _ = directory.write("item", to: "spool/queue/b")
        _ = directory.write(DeliveryState(attempts: 3, nextAttemptAt: 42, lastError: "HTTP 503").json.serializedString,
                            to: "spool/queue/b.state")
        _ = directory.write("{}", to: "spool/queue/gone.state")
        _ = directory.write("half", to: "spool/queue/.tmp-b")
        _ = directory.write("foreign", to: "spool/queue/not.a.key")
        let restored = try spool.restoreQueue()
        #expect(restored.items.map(\.key.rawValue).sorted() == ["a", "b"])
        #expect(restored.items.first { $0.key.rawValue == "b" }?.state
                == DeliveryState(attempts: 3, nextAttemptAt: 42, lastError: "HTTP 503"))
        #expect(restored.foreign == ["not.a.key"])
        #expect(restored.delivered.isEmpty && restored.lostRecords.isEmpty)
        #expect(names("queue") == ["a", "b", "b.state", "not.a.key"])
    }

    /// What a power cut leaves of a failure record written moments before
    /// (no fsync): an empty file, or the start of one.
    @Test(arguments: ["", "{\"attempts\": 3, \"nextAtt"])
    func aFailureRecordAPowerCutLeftUnreadableIsRemovedAtStart(record: String) throws {
        let spool = try makeSpool()
        _ = directory.write("item", to: "spool/queue/a")
        _ = directory.write(record, to: "spool/queue/a.state")
        let restored = try spool.restoreQueue()
        #expect(restored.items == [QueuedFile(key: ItemKey("a")!, state: nil, receivedAt: restored.items[0].receivedAt)])
        #expect(restored.lostRecords == [ItemKey("a")!])
        #expect(names("queue") == ["a"], "the record is gone, so it cannot outlive its item")
    }

    @Test func finishingMovesTheItemAndRetiringMovesItsStateBesideIt() throws {
        let spool = try makeSpool()
        _ = directory.write("item", to: "spool/queue/a")
        _ = directory.write("{}", to: "spool/queue/a.state")
        _ = directory.write("item", to: "spool/queue/b")
        try spool.finish(ItemKey("a")!)
        try spool.finish(ItemKey("b")!)
        #expect(names("queue") == ["a.state"], "one rename per delivery; the record follows later")
        #expect(names("done") == ["a", "b"])
        try spool.retireState(ItemKey("a")!)
        try spool.retireState(ItemKey("b")!)
        #expect(names("queue") == [])
        #expect(names("done") == ["a", "a.state", "b"], "no unlink: b had no state to move")
        #expect(try SpoolInspector(layout: layout).list(.done).map(\.name).sorted() == ["a", "b"])
    }

    @Test func aFirstDeliveryLeavesTheItemUnderOneNameInDone() throws {
        let spool = try makeSpool()
        _ = directory.write("item", to: "spool/new/drop")
        _ = directory.write("item", to: "spool/queue/b")
        try spool.finish(ItemKey("a")!, followsDelivery: false, inbox: "drop")
        try spool.finish(ItemKey("b")!, followsDelivery: false)
        #expect(names("new") == [] && names("queue") == [])
        #expect(names("done") == ["a", "b"])
        var info = stat()
        #expect(lstat(layout.done + "/a", &info) == 0 && info.st_nlink == 1, "one name left, not two")
    }

    /// A spool made before its directories exist cannot hold them open
    /// (SpoolDirectory): it names files by their whole paths and moves them
    /// as one that holds them open does.
    @Test(arguments: [false, true])
    func readingAcceptingAndFinishingWorkWhetherTheDirectoriesWereOpenedOrNot(opened: Bool) throws {
        if opened { try layout.createMissingDirectories() }
        let spool = Spool(layout: layout)
        if !opened { try layout.createMissingDirectories() }
        _ = directory.write("first", to: "spool/new/one")
        _ = directory.write("second", to: "spool/new/two")
        let one = try #require(try SystemCall.linkStatus(layout.new + "/one"))
        #expect(try spool.readDrop("one", maximumSize: 100) == .bytes(Array("first".utf8), modifiedAt:
            Spool.modifiedMilliseconds(one), file: WrittenFile(one)))
        #expect(try spool.readDrop("three", maximumSize: 100) == .gone)
        try spool.accept(drop: "one", as: ItemKey("a")!)
        try spool.finish(ItemKey("a")!, followsDelivery: false)
        try spool.finish(ItemKey("b")!, followsDelivery: false, inbox: "two")
        #expect(names("new") == [] && names("queue") == [])
        #expect(names("done") == ["a", "b"])
        let error = #expect(throws: SpoolError.self) { try spool.accept(drop: "gone", as: ItemKey("c")!) }
        #expect(error?.description.contains(layout.new + "/gone") == true, "\(String(describing: error))")
    }

    /// done/a (version 1) with its failure record, and version 2 queued.
    private func spoolWithADeliveryAndItsSuccessor() throws -> Spool {
        let spool = try makeSpool()
        _ = directory.write("version 1", to: "spool/done/a")
        _ = directory.write(#"{"attempts":2}"#, to: "spool/done/a.state")
        _ = directory.write("version 2", to: "spool/queue/a")
        return spool
    }

    @Test func aDeliveryTheIndexMissedStillReplacesTheEarlierOneAndItsRecord() throws {
        let spool = try spoolWithADeliveryAndItsSuccessor()
        try spool.finish(ItemKey("a")!, followsDelivery: false)
        #expect(names("queue") == [])
        #expect(names("done") == ["a"])
        #expect(try SystemCall.readFile(layout.done + "/a", limit: 64) == Array("version 2".utf8))
    }

    @Test func restoringTheQueueFinishesADeliveryWhoseQueueNameWasNotRemoved() throws {
        let spool = try makeSpool()
        _ = directory.write("item", to: "spool/queue/a")
        _ = directory.write(#"{"attempts":1}"#, to: "spool/queue/a.state")
        _ = directory.write("item", to: "spool/queue/b")
        #expect(link(layout.queue + "/a", layout.done + "/a") == 0)
        #expect(link(layout.queue + "/b", layout.tmp + "/b-elsewhere") == 0)
        let restored = try spool.restoreQueue()
        let (items, delivered) = (restored.items, restored.delivered)
        #expect(delivered == [ItemKey("a")!])
        #expect(items.map(\.key) == [ItemKey("b")!], "another name outside done/ says nothing")
        #expect(names("queue") == ["b"])
        #expect(names("done") == ["a", "a.state"])
    }

    @Test func aDeliveryThatFollowsAnEarlierOneNeverKeepsTheEarlierFailureRecord() throws {
        let spool = try spoolWithADeliveryAndItsSuccessor()
        try spool.finish(ItemKey("a")!, followsDelivery: true)
        #expect(names("done") == ["a"])
        #expect(try SpoolInspector(layout: layout).show(ItemKey("a")!)?.state == nil)

        _ = directory.write(#"{"attempts":3,"lastError":"HTTP 503"}"#, to: "spool/queue/a.state")
        _ = directory.write("version 3", to: "spool/queue/a")
        try spool.finish(ItemKey("a")!, followsDelivery: true)
        try spool.retireState(ItemKey("a")!)
        #expect(names("done") == ["a", "a.state"])
        let report = try #require(try SpoolInspector(layout: layout).show(ItemKey("a")!))
        #expect(report.location == .done)
        #expect(report.state?.attempts == 3, "show reports the failures before the delivery in done/")
    }

    /// A hold writes the reason before it moves the item, a release moves
    /// the item before it removes the reason: a listing between the two
    /// (or after a crash there) must not count the reason as an item.
    @Test func aReasonWithoutItsItemIsNoHeldItem() throws {
        _ = try makeSpool()
        _ = directory.write("HTTP 422\n", to: "spool/hold/k.reason")
        _ = directory.write("bad input\n", to: "spool/rejected/drop.reason")
        let inspector = SpoolInspector(layout: layout)
        #expect(try inspector.list(.hold).isEmpty)
        #expect(try inspector.list(.rejected).map(\.name) == ["drop.reason"], "a producer's drop may be named so")
    }

    /// An item too large for `show` to read (MaxFileSize= allows up to
    /// 1 GiB) is an error naming its file, never "no item".
    @Test func showNamesAQueuedFileItCannotReadRatherThanSayingThereIsNone() throws {
        _ = try makeSpool()
        _ = directory.write([UInt8](repeating: 0x20, count: (16 << 20) + 1), to: "spool/queue/large")
        let refused = #expect(throws: SpoolError.self) { try SpoolInspector(layout: layout).show(ItemKey("large")!) }
        #expect(refused?.code == EFBIG && refused?.path == layout.queue + "/large", "\(String(describing: refused))")
    }

    @Test func holdingAndReleasingMoveTheItemAndItsReason() throws {
        let spool = try makeSpool()
        _ = directory.write("item", to: "spool/queue/a")
        _ = directory.write("{}", to: "spool/queue/a.state")
        try spool.hold(ItemKey("a")!, reason: "HTTP 422: bad\nsku", at: 0, attempts: 1)
        #expect(names("hold") == ["a", "a.reason"])
        #expect(names("queue") == [])
        #expect(spool.holdReason(ItemKey("a")!) == "HTTP 422: bad\\nsku")
        #expect(try spool.release(ItemKey("a")!))
        #expect(names("hold") == [])
        #expect(names("queue") == ["a"])
    }

    @Test func aHoldOrReleaseIsMadeOnceItsRenameIsEvenIfTheLeftoverCannotGo() throws {
        // Left behind: a directory a producer put where the failure record
        // or the reason is (unlink fails with EISDIR). Throwing would have
        // the engine think the key still queued (or still held) while its
        // file has moved, and a later snapshot placed over it.
        let spool = try makeSpool()
        _ = directory.write("item", to: "spool/queue/a")
        _ = directory.write("x", to: "spool/queue/a.state/inside")
        try spool.hold(ItemKey("a")!, reason: "HTTP 422: bad", at: 0, attempts: 1)
        #expect(names("hold") == ["a", "a.reason"])
        #expect(names("queue") == ["a.state"])
        try SystemCall.unlinkIfPresent(layout.hold + "/a.reason")
        _ = directory.write("x", to: "spool/hold/a.reason/inside")
        #expect(try spool.release(ItemKey("a")!))
        #expect(names("queue").contains("a") && !names("hold").contains("a"))
    }

    @Test func aLockedSpoolRefusesASecondDaemon() throws {
        try layout.createMissingDirectories()
        #expect(!SpoolLock.isHeld(layout))
        let lock = try SpoolLock.acquire(layout)
        #expect(SpoolLock.isHeld(layout))
        let second = #expect(throws: SpoolError.self) { try SpoolLock.acquire(layout) }
        #expect(second?.code == EWOULDBLOCK)
        withExtendedLifetime(lock) {}
    }

    @Test func theLockFileIsItsOwnersAloneAndAskingAboutItTakesNoLock() throws {
        // A file group txrecon can open is a file a producer can hold a
        // shared flock on, and the next start would find the lock taken.
        try layout.createMissingDirectories()
        _ = directory.write("", to: "spool/txrecon.lock", mode: 0o640)  // as an older release left it
        var asked = false
        for _ in 0..<100 { asked = SpoolLock.isHeld(layout) || asked }
        #expect(!asked)
        // Nothing of the asking is left behind, and a start takes the lock.
        let lock = try SpoolLock.acquire(layout)
        let info = try #require(try SystemCall.linkStatus(layout.lockFile))
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(SpoolLock.isHeld(layout))
        // As a member of group txrecon asks, who cannot open the file.
        #expect(LockFile.isListedInProcLocks(layout.lockFile))
        withExtendedLifetime(lock) {}
    }

    @Test func aLockNoLongerHeldIsNotListed() throws {
        try layout.createMissingDirectories()
        close(try LockFile.acquire(layout.lockFile))
        #expect(!LockFile.isListedInProcLocks(layout.lockFile) && !SpoolLock.isHeld(layout))
    }

    /// A child spawned at the moment a lock is released holds a copy of its
    /// descriptor until its exec; the lock must be free all the same, or
    /// the process's next run (a sweep after a sweep) finds it taken.
    @Test func aReleasedLockIsFreeWhileACopyOfItsDescriptorLives() throws {
        try layout.createMissingDirectories()
        let first = try LockFile.acquire(layout.lockFile)
        let copy = dup(first)  // what a spawned child holds until its exec
        defer { close(copy) }
        LockFile.release(first)
        #expect(!LockFile.isHeld(layout.lockFile))
        LockFile.release(try LockFile.acquire(layout.lockFile))
    }

    /// The spool the daemon makes itself (a Directory= outside
    /// /var/spool/txrecon, a ctl/ removed) has the modes of the packaged
    /// tmpfiles.d entry; without the sticky bit a producer could move a
    /// root-owned replay request in ctl/ away and back, and replay again.
    @Test func theDirectoriesTheDaemonMakesHaveTheModesTmpfilesGives() throws {
        let checkout = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3)
            .joined(separator: "/")
        let tmpfiles = String(decoding: try SystemCall.readFile(checkout + "/systemd/txrecon.tmpfiles", limit: 1 << 16),
                              as: UTF8.self)
        var packaged: [String: mode_t] = [:]
        for line in tmpfiles.split(separator: "\n") where line.hasPrefix("d ") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            packaged[String(fields[1].dropFirst("/var/spool/txrecon".count))] = mode_t(fields[2], radix: 8)
        }
        try layout.createMissingDirectories()
        for (path, mode) in layout.directoryModes {
            let name = String(path.dropFirst(layout.root.count))
            // The setgid bit aside: the daemon's mkdir may lose it
            // (RestrictSUIDSGID=), and on a directory only it writes it
            // changes nothing.
            #expect(packaged[name].map { $0 & 0o1777 } == mode & 0o1777, "\(name)")
            var info = stat()
            #expect(stat(path, &info) == 0)
            #expect(info.st_mode & S_ISVTX == mode & S_ISVTX, "\(name) as made")
        }
    }

    @Test func startsWhileTheLockIsAskedAboutNeverFail() async throws {
        // `txrecon status` in a monitoring loop beside restarts: asking by
        // taking a shared lock made a start at that instant fail.
        //
        // Each start takes a lock file of its own, already there as after a
        // restart, and the asker asks about the one being taken. One file
        // for all of them failed a start now and then under
        // `make test-loaded`: a test beside this one spawning a process
        // copies this process's descriptors into the child until it execs,
        // so the previous start's lock outlived its close(2). No process of
        // txrecon spawns anything while it holds or takes a lock.
        try layout.createMissingDirectories()
        let paths = (0..<2000).map { "\(layout.root)/lock-\($0)" }
        for path in paths { close(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)) }
        let current = Atomic(0)
        let asking = Task.detached {
            var held = 0
            while !Task.isCancelled {
                if LockFile.isHeld(paths[current.load(ordering: .relaxed)]) { held += 1 }
            }
            return held
        }
        var conflicts = 0
        var others: [SpoolError] = []
        for (index, path) in paths.enumerated() {
            current.store(index, ordering: .relaxed)
            do {
                close(try LockFile.acquire(path))
            } catch where error.code == EWOULDBLOCK {
                conflicts += 1
            } catch {
                others.append(error)
            }
        }
        asking.cancel()
        _ = await asking.value
        #expect(conflicts == 0)
        #expect(others.isEmpty, "\(Set(others.map(\.description)))")
    }
}
