// A receipt upload's split as the splitter runs it, on real files, with the
// engines stood in for: what is written for what is confirmed or pending,
// and what becomes of parts an engine does not take.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptUploadsTests {
    let directory = TemporaryDirectory("txrecon-uploads")
    var layout: SpoolLayout { SpoolLayout(root: directory.path) }

    init() throws {
        try SpoolLayout(root: directory.path).createMissingDirectories()
    }

    /// Confirms nothing.
    struct NothingConfirmed: ConfirmedVersions {
        func confirmedVersion(of key: ItemKey, by destination: String) -> ItemVersion? { nil }
    }

    /// What the stand-in engines were handed, batch by batch.
    final class Engines: Sendable {
        let batches = Mutex<[[Drop]]>([])
        let answer: @Sendable (Int) -> ReceiptUploads.HandOff
        let pending: @Sendable ([ItemKey]) -> [String: [ItemKey: ItemVersion]]

        init(answer: @escaping @Sendable (Int) -> ReceiptUploads.HandOff = { _ in .init(full: false, failures: .init()) },
             pending: @escaping @Sendable ([ItemKey]) -> [String: [ItemKey: ItemVersion]] = { _ in [:] }) {
            self.answer = answer
            self.pending = pending
        }
    }

    func uploads(_ engines: Engines) -> ReceiptUploads {
        let spool = Spool(layout: layout)
        return ReceiptUploads(spool: spool, receipts: ReceiptLibrary(store: ReceiptStore(layout: layout)),
                              destinations: [Destination.primaryName], events: ItemEvents(sink: RecordingLogSink()),
                              log: RecordingLogSink(), confirmations: { _, _ in NothingConfirmed() },
                              hand: { drops, _ in
                                  let count = engines.batches.withLock { $0.append(drops); return $0.count }
                                  return engines.answer(count)
                              }, pendingVersions: engines.pending)
    }

    /// The upload of a receipt of `count` purchases, set aside as intake does.
    func job(purchases count: Int) throws -> ReceiptSplitter.Job {
        let upload = TestReceipt.upload(TestReceipt.sign(TestReceipt.payload(purchases: TestReceipt.purchases(count))))
        try SystemCall.writeNewFile(layout.new + "/upload", upload, sync: false)
        guard case let .receipt(split) = try InputDecoder().decode(upload) else { throw Rejection("test", "no receipt") }
        let file = WrittenFile(try #require(try SystemCall.linkStatus(layout.new + "/upload")))
        let aside = try #require(try Spool(layout: layout).setAside(drop: "upload", file: file))
        return ReceiptSplitter.Job(upload: aside, receiptSha256: ReceiptStore.name(of: split.der), split: split,
                                   modifiedAt: 0,
                                   settings: Intake.Settings(maximumFileSize: 1 << 20, acceptEnvelopes: false,
                                                             verification: nil))
    }

    func names(_ subdirectory: String) -> [String] {
        ((try? SystemCall.listDirectory(directory.path + "/" + subdirectory)) ?? []).sorted()
    }

    static func splitter() throws -> ReceiptSplitter {
        try ReceiptSplitter(work: { _, _, _ in .split(leftInInbox: false) }, rescan: {})
    }

    @Test func aFullEngineStopsTheHandOverAndLeavesTheRestToIntake() throws {
        let engines = Engines(answer: { _ in .init(full: true, failures: .init()) })
        let splitter = try Self.splitter()
        defer { splitter.close() }
        let outcome = uploads(engines).run(try job(purchases: 300), delayIfFailed: .zero, splitter: splitter)
        #expect(outcome == .split(leftInInbox: true), "intake reads the rest")
        let handed = engines.batches.withLock { $0 }
        #expect(handed.count == 1 && handed[0].count == Intake.batchSize, "no batch after the engine said it is full")
        let left = Set(names("new")).subtracting(handed[0].map(\.name))
        #expect(left.count == 301 - Intake.batchSize)
        #expect(left.allSatisfy { !splitter.releaseOwnPart($0) }, "their events are intake's to take")
        #expect(handed[0].allSatisfy { splitter.releaseOwnPart($0.name) })
    }

    @Test func aRefusedBatchLeavesItsPartsToIntake() throws {
        var refused = IntakeBacklog.Failures()
        refused.record(SpoolError("rename", "/spool/new/upload.1", EIO))
        let failures = refused
        let engines = Engines(answer: { _ in .init(full: false, failures: failures) })
        let splitter = try Self.splitter()
        defer { splitter.close() }
        let outcome = uploads(engines).run(try job(purchases: 2), delayIfFailed: .zero, splitter: splitter)
        #expect(outcome == .split(leftInInbox: true))
    }

    @Test func whatIsPendingAtItsVersionAlreadyIsNotWrittenAgain() throws {
        // An identical upload a moment ago: its parts are on their way.
        let job = try job(purchases: 3)
        let versions = Dictionary(uniqueKeysWithValues: ([ReceiptItems.receipt(
            job.split.receipt, der: job.split.der, receiptSha256: ReceiptStore.name(of: job.split.der), context: nil)]
            + job.split.purchases).map { ($0.key, $0.version) })
        let engines = Engines(pending: { _ in [Destination.primaryName: versions] })
        let splitter = try Self.splitter()
        defer { splitter.close() }
        #expect(uploads(engines).run(job, delayIfFailed: .zero, splitter: splitter) == .split(leftInInbox: false))
        #expect(names("new").isEmpty, "no part written")
        #expect(names("receipts").isEmpty, "the upload removed, its receipt not stored again")
        #expect(engines.batches.withLock { $0.allSatisfy(\.isEmpty) })
    }

    @Test func aFailedSplitKeepsItsUploadAside() throws {
        let job = try job(purchases: 2)
        // receipts/ refuses the receipt's file.
        try SystemCall.makeDirectory(layout.receipts + "/" + ReceiptStore.name(of: job.split.der), mode: 0o750)
        let splitter = try Self.splitter()
        defer { splitter.close() }
        guard case .failed = uploads(Engines()).run(job, delayIfFailed: .zero, splitter: splitter) else {
            Issue.record("not failed")
            return
        }
        #expect(names("new").isEmpty)
        #expect(try SystemCall.linkStatus(job.upload.path) != nil, "still aside, split again after the delay")
    }
}
