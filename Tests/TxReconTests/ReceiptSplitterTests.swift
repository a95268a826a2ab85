// The receipt splitter's thread: a bounded queue of jobs, their parts'
// inotify events let go by intake, a failed job run again after a growing
// delay and reported to intake. Jobs here are stand-ins that report what
// they were given; nothing waits on the clock but for the job's own signal
// (retry delays are zero, and their growth is checked as numbers).
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptSplitterTests {
    /// A job for the upload `name`, of a receipt of its own.
    static func job(_ name: String) throws -> ReceiptSplitter.Job {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [TestReceipt.Purchase(transactionId: "1000000000000001")]))
        guard case let .receipt(split) = try InputDecoder().decode(TestReceipt.upload(receipt)) else {
            throw Rejection("test", "not a receipt upload")
        }
        return ReceiptSplitter.Job(upload: AsideDrop(name: name, path: "/nonexistent/" + name),
                                   receiptSha256: String(repeating: "0", count: 64 - name.utf8.count) + name, split: split,
                                   modifiedAt: 0, settings: Intake.Settings(maximumFileSize: 1 << 20,
                                                                            acceptEnvelopes: false, verification: nil))
    }

    static func submit(_ splitter: ReceiptSplitter, _ name: String) throws -> ReceiptSplitter.Submission {
        let job = try Self.job(name)
        return try splitter.submit(receipt: job.receiptSha256) { job }
    }

    @Test func anUploadBeyondTheCapacityWaitsInNewAndIntakeLooksAgainOnceAJobEnds() throws {
        let started = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0)
        let rescans = DispatchSemaphore(value: 0)
        let prepared = Mutex(0)
        let splitter = try ReceiptSplitter(capacity: 2, work: { _, _, _ in
            started.signal()
            finish.wait()
            return .split(leftInInbox: false)
        }, rescan: { rescans.signal() })
        defer { splitter.close() }
        #expect(try Self.submit(splitter, "first") == .queued)
        started.wait()
        #expect(try Self.submit(splitter, "second") == .queued, "one running, one queued")
        let job = try Self.job("third")
        #expect(try splitter.submit(receipt: job.receiptSha256) {
            prepared.withLock { $0 += 1 }
            return job
        } == .noRoom, "no room: the upload is not even set aside")
        #expect(prepared.withLock { $0 } == 0)
        finish.signal()
        rescans.wait()
        started.wait()
        #expect(try Self.submit(splitter, "third") == .queued, "room again")
        finish.signal()
        started.wait()
        finish.signal()
    }

    @Test func aFailedSplitRunsAgainAndIntakeLearnsOfALackOfSpace() throws {
        let done = DispatchSemaphore(value: 0), rescans = DispatchSemaphore(value: 0)
        let runs = Mutex(0)
        let full = SpoolError("write", "/spool/new/x", ENOSPC)
        let splitter = try ReceiptSplitter(firstRetry: .zero, longestRetry: .zero, work: { _, _, _ in
            let run = runs.withLock { $0 += 1; return $0 }
            guard run > 2 else { return .failed(full) }
            done.signal()
            return .split(leftInInbox: false)
        }, rescan: { rescans.signal() })
        defer { splitter.close() }
        #expect(try Self.submit(splitter, "upload") == .queued)
        done.wait()
        rescans.wait()
        rescans.wait()
        let failures = splitter.takeFailures()
        #expect(failures.count == 2 && failures.space == full, "intake's scan pauses for it")
        #expect(splitter.takeFailures().count == 0, "once")
    }

    @Test func theDelayBeforeAFailedSplitRunsAgainDoublesUpToTheLongest() throws {
        let splitter = try ReceiptSplitter(firstRetry: .seconds(1), longestRetry: .seconds(30), work: { _, _, _ in
            .split(leftInInbox: false)
        }, rescan: {})
        defer { splitter.close() }
        #expect((1...7).map { splitter.retryDelay(afterFailures: $0) }
                == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
    }

    @Test func partsLeftInNewAreReadByIntakeAgain() throws {
        let rescans = DispatchSemaphore(value: 0)
        let splitter = try ReceiptSplitter(work: { _, _, _ in .split(leftInInbox: true) }, rescan: { rescans.signal() })
        defer { splitter.close() }
        #expect(try Self.submit(splitter, "upload") == .queued)
        rescans.wait()
    }

    @Test func anUploadOfAReceiptAJobHasAlreadyIsADuplicateUntilTheJobEnds() throws {
        let started = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0)
        let splitter = try ReceiptSplitter(work: { _, _, _ in
            started.signal()
            finish.wait()
            return .split(leftInInbox: false)
        }, rescan: {})
        defer { splitter.close() }
        #expect(try Self.submit(splitter, "upload") == .queued)
        started.wait()
        #expect(try Self.submit(splitter, "upload") == .duplicate, "running")
        #expect(try Self.submit(splitter, "other") == .queued)
        finish.signal()
        started.wait()
        #expect(try Self.submit(splitter, "upload") == .queued, "done: its parts are pending or delivered now")
        finish.signal()
        started.wait()
        finish.signal()
    }

    @Test func claimsArePartsOwnUntilIntakeSeesThemOrTheyAreGivenUp() throws {
        let splitter = try ReceiptSplitter(work: { _, _, _ in .split(leftInInbox: false) }, rescan: {})
        defer { splitter.close() }
        splitter.claim("upload.1")
        #expect(splitter.releaseOwnPart("upload.1"), "its part's event is let go")
        #expect(!splitter.releaseOwnPart("upload.1"), "once")
        splitter.claim("upload.2")
        splitter.unclaim("upload.2")
        #expect(!splitter.releaseOwnPart("upload.2"), "a name the part did not get is a producer's")
        splitter.claim("upload.3")
        splitter.forgetClaims()
        #expect(!splitter.releaseOwnPart("upload.3"), "an overflow lost its event")
    }

    @Test func aPartNeverClaimsAProducersFileItsNameWasTakenBy() throws {
        let directory = TemporaryDirectory("txrecon-split-claims")
        let layout = SpoolLayout(root: directory.path)
        try layout.createMissingDirectories()
        let spool = Spool(layout: layout)
        _ = directory.write("upload", to: "new/upload")
        _ = directory.write("a producer's", to: "new/upload.1")
        let splitter = try ReceiptSplitter(work: { _, _, _ in .split(leftInInbox: false) }, rescan: {})
        defer { splitter.close() }
        let file = WrittenFile(try #require(try SystemCall.linkStatus(layout.new + "/upload")))
        let aside = try #require(try spool.setAside(drop: "upload", file: file))
        let names = try spool.split(drop: aside, into: [Array("part".utf8)], claim: splitter.claim,
                                    unclaim: splitter.unclaim)
        #expect(names.count == 1 && names[0] != "upload.1")
        #expect(!splitter.releaseOwnPart("upload.1"), "intake takes the producer's file when its event comes")
        #expect(splitter.releaseOwnPart(names[0]))
    }
}
