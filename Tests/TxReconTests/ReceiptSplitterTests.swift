// The receipt splitter's thread: one job per upload at a time, its parts'
// inotify events let go by intake, a failed job retried. Jobs here are
// stand-ins that report what they were given; nothing waits on the clock
// but for the job's own signal (and a failed job's retry delay of zero).
import Dispatch
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptSplitterTests {
    static func job(_ name: String) throws -> ReceiptSplitter.Job {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [TestReceipt.Purchase(transactionId: "1000000000000001")]))
        guard case let .receipt(split) = try InputDecoder().decode(TestReceipt.upload(receipt)) else {
            throw Rejection("test", "not a receipt upload")
        }
        return ReceiptSplitter.Job(name: name, split: split, modifiedAt: 0, settings: Intake.Settings(
            maximumFileSize: 1 << 20, acceptEnvelopes: false, verification: nil))
    }

    @Test func anUploadIsSplitOnceAtATimeAndIsTheSplittersUntilItIsDone() throws {
        let started = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0)
        let splitter = try ReceiptSplitter(work: { _, claim in
            claim("upload.1")
            started.signal()
            finish.wait()
            return true
        }, retry: {})
        defer { splitter.close() }
        #expect(splitter.submit(try Self.job("upload")))
        started.wait()
        #expect(splitter.isSplitting("upload"), "intake does not take it again meanwhile")
        #expect(!splitter.submit(try Self.job("upload")), "nor queue it twice")
        #expect(splitter.releaseOwnPart("upload.1"), "its part's event is let go")
        #expect(!splitter.releaseOwnPart("upload.1"), "once")
        #expect(!splitter.releaseOwnPart("other"))
        // Jobs run one after the other: once the next one has started, the
        // first is done.
        #expect(splitter.submit(try Self.job("next")))
        finish.signal()
        started.wait()
        #expect(!splitter.isSplitting("upload"))
        #expect(splitter.submit(try Self.job("upload")), "done, it may come again (split again after a crash)")
        finish.signal()
        started.wait()
        finish.signal()
    }

    @Test func aFailedSplitAsksIntakeToLookAgainWithTheUploadNoLongerItsOwn() throws {
        let retried = DispatchSemaphore(value: 0)
        let attempts = Mutex(0)
        let splitter = try ReceiptSplitter(retryDelay: .zero, work: { _, _ in
            attempts.withLock { $0 += 1 }
            return false
        }, retry: { retried.signal() })
        defer { splitter.close() }
        #expect(splitter.submit(try Self.job("upload")))
        retried.wait()
        #expect(!splitter.isSplitting("upload"), "back to intake, which reads new/ again")
        #expect(attempts.withLock { $0 } == 1)
    }

    @Test func claimsWhoseEventsAnOverflowLostAreForgotten() throws {
        let splitter = try ReceiptSplitter(work: { _, _ in true }, retry: {})
        defer { splitter.close() }
        splitter.claim("upload.1")
        splitter.forgetClaims()
        #expect(!splitter.releaseOwnPart("upload.1"))
    }
}
