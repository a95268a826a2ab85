// Spool+FanOut on a real spool: a drop's copies are always named as the
// drop, a reused name waits, a copy with the same bytes counts, a drop
// replaced meanwhile is not removed, and copies go back into new/ as files
// of their own when the further destinations are gone.
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct FanOutSpoolTests {
    let directory = TemporaryDirectory("txrecon-fanout")
    var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }
    var analytics: SpoolLayout { layout.destination("analytics") }
    var primary: SpoolLayout { layout.destination(Destination.primaryName) }

    init() throws {
        try layout.createMissingDirectories()
        try layout.destination("analytics").createMissingDestinationDirectories()
        try layout.destination(Destination.primaryName).createMissingDestinationDirectories()
    }

    func write(_ text: String, to path: String) {
        _ = directory.write(text, to: String(path.dropFirst(directory.path.count + 1)), mode: 0o640)
    }

    func identity(_ path: String) throws -> FileIdentity? {
        try SystemCall.linkStatus(path).map(FileIdentity.init)
    }

    @Test func aDropIsLinkedUnderItsOwnNameAndAReusedNameWaitsForTheEarlierCopy() throws {
        let spool = Spool(layout: layout, fanOutInboxes: [analytics.new, primary.new])
        write("second", to: layout.new + "/drop")
        write("first", to: analytics.new + "/drop")
        #expect(throws: SpoolError.self) { try spool.fanOut(drop: "drop", into: [primary.new, analytics.new], maximumSize: 1 << 20) }
        // The drop stays; its link into the primary's inbox is recognised as its own.
        let info = try #require(try SystemCall.linkStatus(layout.new + "/drop"))
        #expect(info.st_nlink == 2 && spool.fanOutCopies(of: "drop", file: FileIdentity(info)) == 1)
        #expect(!spool.isInInbox("drop", sameFileAs: Spool(layout: analytics)), "the earlier copy may be taken")
        #expect(spool.isInInbox("drop", sameFileAs: Spool(layout: primary)), "this one may not")

        try SystemCall.unlinkIfPresent(analytics.new + "/drop")  // analytics took the first
        let file = try spool.fanOut(drop: "drop", into: [primary.new, analytics.new], maximumSize: 1 << 20)
        #expect(try identity(analytics.new + "/drop") == file && identity(primary.new + "/drop") == file)
        try spool.completeFanOut(of: [("drop", file)], into: [primary.new, analytics.new])
        #expect(SystemCall.isMissing(layout.new + "/drop"))
    }

    /// Where a drop must be copied (a producer's file the daemon may not
    /// link), the copy reads at most MaxFileSize=: the producer may have
    /// grown its file since intake checked it. The next scan refuses it.
    @Test func aDropGrownBeyondMaxFileSizeSinceItsCheckIsNotCopied() throws {
        let spool = Spool(layout: layout)
        write(String(repeating: "x", count: 2048), to: layout.new + "/drop")
        let info = try #require(try SystemCall.linkStatus(layout.new + "/drop"))
        #expect(throws: SpoolError.self) {
            try spool.copy(layout.new + "/drop", info: info, to: analytics.new + "/drop", maximumSize: 1024)
        }
        #expect(SystemCall.isMissing(analytics.new + "/drop"))
        #expect(try spool.copy(layout.new + "/drop", info: info, to: analytics.new + "/drop", maximumSize: 4096))
    }

    @Test func aCopyWithTheSameBytesCountsAsTheDropsOwn() throws {
        let spool = Spool(layout: layout)
        write("same", to: layout.new + "/drop")
        write("same", to: analytics.new + "/drop")
        _ = try spool.fanOut(drop: "drop", into: [analytics.new], maximumSize: 1 << 20)
        #expect(try SystemCall.linkStatus(layout.new + "/drop")?.st_nlink == 1, "nothing linked over the copy")
    }

    @Test func aDropReplacedWhileItFansOutIsNotRemoved() throws {
        let spool = Spool(layout: layout)
        write("one", to: layout.new + "/drop")
        let file = try spool.fanOut(drop: "drop", into: [analytics.new], maximumSize: 1 << 20)
        write("two", to: layout.tmp + "/drop")
        #expect(rename(layout.tmp + "/drop", layout.new + "/drop") == 0)
        try spool.completeFanOut(of: [("drop", file)], into: [analytics.new])
        #expect(try SystemCall.readFile(layout.new + "/drop", limit: 16) == Array("two".utf8))
        #expect(try SystemCall.readFile(analytics.new + "/drop", limit: 16) == Array("one".utf8))
    }

    @Test func copiesGoBackIntoNewAsFilesOfTheirOwn() throws {
        // One copy still shares its file with analytics' queued item, one
        // has it to itself, one is new/NAME itself (a fan-out never completed).
        write("shared", to: primary.new + "/shared")
        #expect(link(primary.new + "/shared", analytics.queue + "/k") == 0)
        write("alone", to: primary.new + "/alone")
        write("both", to: layout.new + "/both")
        #expect(link(layout.new + "/both", primary.new + "/both") == 0)
        let modified = try #require(try SystemCall.linkStatus(primary.new + "/shared")).st_mtim

        #expect(try Spool(layout: primary).returnCopies(to: layout.new) == 2)
        #expect(try SystemCall.listDirectory(primary.new).isEmpty)
        #expect(try SystemCall.listDirectory(layout.new).sorted() == ["alone", "both", "shared"])
        for name in ["alone", "both", "shared"] {
            #expect(try SystemCall.linkStatus(layout.new + "/" + name)?.st_nlink == 1, "\(name) has one name")
        }
        let returned = try #require(try SystemCall.linkStatus(layout.new + "/shared"))
        #expect(returned.st_mtim.tv_sec == modified.tv_sec && returned.st_mtim.tv_nsec == modified.tv_nsec)
        #expect(try SystemCall.readFile(analytics.queue + "/k", limit: 16) == Array("shared".utf8))
        #expect(try SystemCall.listDirectory(layout.tmp).isEmpty)
    }
}
