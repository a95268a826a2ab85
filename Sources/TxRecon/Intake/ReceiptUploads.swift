// ReceiptUploads: what becomes of a verified StoreKit 1 receipt upload,
// from intake's look at it to its parts in the engines' hands.
//
//   new/NAME -> receipts/.split-N-NAME       take: on intake's thread, if
//                                            the splitter has room (else it
//                                            stays in new/, read again once
//                                            a job ends) and NAME still
//                                            holds the file examined; an
//                                            upload of a receipt a job has
//                                            already is removed there
//   receipts/HEX                             split: the receipt stored first
//   receipts/.split-… -> new/NAME.N …        the parts ReceiptSplitPlan
//                                            decides on, then handed over
//   receipts/.split-… -> rejected/NAME       no destination takes any of it
//   receipts/.split-… (unlinked)             nothing left to deliver
//
// The split runs on the splitter's thread (ReceiptSplitter), never on
// intake's; the plan skips what every destination confirmed (the ledger,
// done/) and what is pending there already at the same or a newer version,
// so that a burst of identical uploads writes its parts once. Parts are
// handed over a batch at a time; a batch refused or an engine full stops
// the hand-over, and intake reads what is left in new/.
// Reports: one entry per split (info), per upload nothing was written for
// (info), per failed split (error, with when it is tried again).
import Glibc

final class ReceiptUploads: Sendable {
    /// What a hand-over of parts to the engines came to.
    struct HandOff: Sendable {
        /// An engine has as many keys pending as it takes.
        var full: Bool
        var failures: IntakeBacklog.Failures
    }

    let spool: Spool
    let receipts: ReceiptLibrary
    /// The destinations' names, in route order.
    let destinations: [String]
    let events: ItemEvents
    let log: any LogSink
    private let confirmations: ConfirmationSource
    /// The verifiers `confirmations` reads done/ with, on the splitter's
    /// thread (the intake thread's own are for the drops it examines).
    private let storedItemVerifiers = VerifierPool()
    /// Hands parts (and a count of rejections) to the engines as intake
    /// hands drops.
    private let hand: @Sendable (_ drops: [Drop], _ rejected: Int) -> HandOff
    /// The versions pending for keys, by destination name.
    private let pendingVersions: @Sendable ([ItemKey]) -> [String: [ItemKey: ItemVersion]]

    init(spool: Spool, receipts: ReceiptLibrary, destinations: [String], events: ItemEvents, log: any LogSink,
         confirmations: @escaping ConfirmationSource,
         hand: @escaping @Sendable (_ drops: [Drop], _ rejected: Int) -> HandOff,
         pendingVersions: @escaping @Sendable ([ItemKey]) -> [String: [ItemKey: ItemVersion]]) {
        self.spool = spool
        self.receipts = receipts
        self.destinations = destinations
        self.events = events
        self.log = log
        self.confirmations = confirmations
        self.hand = hand
        self.pendingVersions = pendingVersions
    }

    /// Intake's step for the upload `name`, examined as `file`: set aside
    /// and queued on `splitter`. Without room there it stays in new/; an
    /// upload of a receipt a job splits already is removed (set aside
    /// first, so that only the file examined goes): its items are that
    /// job's, at the same versions.
    func take(_ name: String, _ split: ReceiptSplit, modifiedAt: Int64, file: WrittenFile, settings: Intake.Settings,
              splitter: ReceiptSplitter) throws(SpoolError) {
        let receiptSha256 = ReceiptStore.name(of: split.der)
        let submission = try splitter.submit(receipt: receiptSha256) { () throws(SpoolError) -> ReceiptSplitter.Job? in
            guard let upload = try spool.setAside(drop: name, file: file) else { return nil }
            return ReceiptSplitter.Job(upload: upload, receiptSha256: receiptSha256, split: split,
                                       modifiedAt: modifiedAt, settings: settings)
        }
        guard submission == .duplicate, let upload = try spool.setAside(drop: name, file: file) else { return }
        try SystemCall.unlinkIfPresent(upload.path)
        log.write(LogEntry(.info, "new/\(LogText.escaped(name)): receipt upload of the receipt \(receiptSha256), which an "
                           + "upload before it is being split into its parts already: nothing to add; removed",
                           fields: [("TXRECON_FILE", name)]))
    }

    /// A job's run, on the splitter's thread: the parts made and handed
    /// over a batch at a time.
    func run(_ job: ReceiptSplitter.Job, delayIfFailed: Duration, splitter: ReceiptSplitter) -> ReceiptSplitter.Outcome {
        let name = job.upload.name
        var rejected = 0
        let drops: [Drop]
        do throws(SpoolError) {
            drops = try split(job, rejected: &rejected, splitter: splitter)
        } catch {
            log.write(LogEntry(.error, "new/\(LogText.escaped(name)): a receipt upload not split: \(error); it waits "
                               + "aside in \(spool.layout.receipts)/ and is tried again in "
                               + "\(delayIfFailed.components.seconds) s", fields: [("TXRECON_FILE", name)]))
            return .failed(error)
        }
        var start = 0
        repeat {
            let batch = Array(drops[start..<min(start + Intake.batchSize, drops.count)])
            let handOff = hand(batch, rejected)
            rejected = 0
            start += batch.count
            if handOff.full || handOff.failures.count > 0 {
                // What was not handed over waits in new/ for intake, which
                // the engine asks to read it once it has room, or this.
                for drop in drops[start...] { splitter.unclaim(drop.name) }
                return .split(leftInInbox: true)
            }
        } while start < drops.count
        return .split(leftInInbox: false)
    }

    /// Replaces the upload set aside with the parts ReceiptSplitPlan
    /// decides on: the receipt stored in receipts/ first (durable before
    /// anything names it), then the parts written at once (Spool.split;
    /// each name in new/ claimed first), the upload removed last. The
    /// parts' items are the ones just verified, handed on as they are:
    /// nothing is read back.
    private func split(_ job: ReceiptSplitter.Job, rejected: inout Int,
                       splitter: ReceiptSplitter) throws(SpoolError) -> [Drop] {
        let (upload, split, settings, receiptSha256) = (job.upload, job.split, job.settings, job.receiptSha256)
        let reader = StoredItemReader(acceptEnvelopes: settings.acceptEnvelopes, policy: settings.verification,
                                      verifiers: storedItemVerifiers, receipts: receipts)
        let keys = [ReceiptItems.key(ofReceipt: receiptSha256)] + split.purchases.map(\.key)
        let plan = ReceiptSplitPlan(split, receiptSha256: receiptSha256,
                                    destinations: Array(zip(destinations, settings.matches)),
                                    confirmations: confirmations(reader, settings.maximumFileSize),
                                    pendingVersions: pendingVersions(keys))
        let summary = "\(split.purchases.count) purchase\(split.purchases.count == 1 ? "" : "s") and the receipt "
            + "\(receiptSha256)"
        let shown = "new/\(LogText.escaped(upload.name))"
        if plan.takenByNone {
            // One file in rejected/ for the upload, not one per purchase.
            let rejection = Intake.noDestination(split.purchases[0])
            let movedTo = try spool.rejectAside(upload, because: rejection, at: Timestamp.nowMilliseconds())
            events.rejected(file: upload.name, rejection: rejection, movedTo: movedTo)
            rejected += 1
            return []
        }
        if plan.items.isEmpty {
            // All of it confirmed or pending at its version wherever it is
            // taken: the earlier deliveries in done/ are its trace, and this line.
            try SystemCall.unlinkIfPresent(upload.path)
            log.write(LogEntry(.info, "\(shown): receipt upload of \(summary): every item already confirmed or "
                               + "pending at its version (\(plan.confirmed) confirmed, \(plan.pending) pending), "
                               + "nothing to deliver; removed", fields: [("TXRECON_FILE", upload.name)]))
            return []
        }
        try receipts.store.store(split.der, name: receiptSha256)
        let parts = plan.items.map { item in
            ReceiptSplit.part(receiptSha256: receiptSha256, entry: item.kind == .receipt ? item.key.rawValue : nil,
                              context: split.context)
        }
        let names = try spool.split(drop: upload, into: parts, modifiedAt: job.modifiedAt,
                                    claim: splitter.claim, unclaim: splitter.unclaim)
        log.write(LogEntry(.info, "\(shown): receipt upload of \(summary) split into \(names.count) drops "
                           + "(\(plan.confirmed) items already confirmed, \(plan.pending) pending, \(plan.untaken) "
                           + "taken by no destination)", fields: [("TXRECON_FILE", upload.name)]))
        // More than a batch is a history, not news: delivered after what
        // else is due, so that it holds up no unrelated item (PendingItems).
        let bulk = names.count > Intake.batchSize
        return zip(names, plan.items).map { Drop(name: $0, item: $1, receivedAt: job.modifiedAt, bulk: bulk) }
    }
}
