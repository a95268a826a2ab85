// Importer: one run of `txrecon import`: bring a live app's existing
// customers in, so that a backend that adopts txrecon starts with what
// Apple knows rather than with the customers who act afterwards.
//
// For each customer of the input (a transaction id, originalTransactionId or
// appTransactionId per line), in order: one Get All Subscription Statuses
// call (each subscription's latest transaction with its renewal info), then
// Get Transaction History v2 page by page (`revision`, the same query on
// every page, oldest first). Every signed transaction is verified as intake
// verifies it (SnapshotJudge); a subscription's latest transaction is taken
// from the status answer with its renewal info (format 3), so that the
// first reconcile after the import finds nothing changed; every other one
// alone (format 1). Each is compared with what the destinations confirmed,
// as reconcile compares (Apple signs history afresh too), and only what
// they lack or hold another content of is dropped into new/. After each
// page the checkpoint (line, revision) is saved, once the page's drops are
// durable; a kill at any instant repeats at most that page, whose drops then
// compare or supersede as the same snapshots. A customer with an answer
// that does not verify is left there (the pages before it stay spooled,
// each verified), counted refused; the run goes on and ends with exit 1.
// A request Apple refuses, or keeps answering "not found, retry" past the
// backoff budget, fails that customer alone (counted, exit 1), as reconcile
// does: one stuck id never keeps a run, or every run after it, from the
// customers after it. What the status answer gave (verified) is dropped
// even when the history fails or is unknown, so that nothing Apple showed
// is thrown away; a page refused after a revision (one saved by a killed
// run, or one that expired while the run waited) is asked again from the
// customer's first page, once.
// In a dry run nothing is dropped or saved; what the destinations lack goes
// to `listing`. Reports through the returned `ImportReport`.

final class Importer {
    /// One customer of the input: its id and where the input names it
    /// (`customers.txt:12`, `receipt /srv/receipts/a`), for messages.
    struct Customer: Sendable, Equatable {
        var id: String
        var source: String
    }

    private let session: AppleAPISession
    private let state: ReconcileStateDirectory?
    private let customers: [Customer]
    /// The SHA-256 of the input's ids (hex): which input a checkpoint belongs to.
    private let inputDigest: String
    private let listing: ((String) -> Void)?
    private let log: any LogSink

    /// - Parameter state: nil for a dry run, which saves no checkpoint.
    init(session: AppleAPISession, state: ReconcileStateDirectory?, customers: [Customer], inputDigest: String,
         listing: ((String) -> Void)?, log: any LogSink) {
        self.session = session
        self.state = state
        self.customers = customers
        self.inputDigest = inputDigest
        self.listing = listing
        self.log = log
    }

    func run() -> ImportReport {
        var report = ImportReport(dryRun: listing != nil, customers: customers.count,
                                  startedAt: session.clock.wallMilliseconds)
        let checkpoint = state?.importCheckpoint(input: inputDigest) ?? ImportCheckpoint(input: inputDigest)
        if checkpoint.index > 0 || checkpoint.revision != nil {
            report.resumedAt = customers.indices.contains(checkpoint.index) ? customers[checkpoint.index].source : nil
        }
        // Those left behind before a kill still count: the run that goes on
        // ends with exit 1 as the first would have.
        report.refused = checkpoint.refused
        report.failed = checkpoint.failed
        do throws(SweepStop) {
            for index in checkpoint.index..<max(customers.count, checkpoint.index) {
                let revision = index == checkpoint.index ? checkpoint.revision : nil
                try importCustomer(index: index, from: revision, report: &report)
                try save(ImportCheckpoint(input: inputDigest, index: index + 1, refused: report.refused,
                                          failed: report.failed))
            }
            try save(nil)
        } catch {
            report.stop = error
        }
        report.finishedAt = session.clock.wallMilliseconds
        return report
    }

    private func save(_ checkpoint: ImportCheckpoint?) throws(SweepStop) {
        try state?.saveImportCheckpoint(checkpoint)
    }

    private func importCustomer(index: Int, from startRevision: String?,
                                report: inout ImportReport) throws(SweepStop) {
        let customer = customers[index]
        let resume = "the next run goes on with \(customer.id) (\(customer.source))"
        var latest: [ItemKey: (drop: [UInt8], item: Item)] = [:]
        switch try session.ask({ session.client.subscriptionStatuses(customer.id) },
                               what: "a subscription status answer", resume: resume,
                               retriesConcernThisOne: true) {
        case .answer(let statuses):
            for snapshot in statuses.subscriptions {
                do {
                    let item = try session.judge.verify(snapshot.drop)
                    latest[item.key] = (snapshot.drop, item)
                } catch {
                    return refuse(customer, "\(error)", report: &report)
                }
            }
        case .unknown:
            break  // A customer without subscriptions has a history all the same.
        case .failed(let why):
            return fail(customer, why, report: &report)
        }
        try importHistory(index: index, from: startRevision, latest: latest, report: &report)
    }

    private func importHistory(index: Int, from startRevision: String?,
                               latest: [ItemKey: (drop: [UInt8], item: Item)],
                               report: inout ImportReport) throws(SweepStop) {
        let customer = customers[index]
        let resume = "the next run goes on with \(customer.id) (\(customer.source))"
        var revision = startRevision
        var unseen = latest
        var restarted = false
        while true {
            let page: TransactionHistoryPage
            switch try session.ask({ session.client.transactionHistory(customer.id, revision: revision) },
                                   what: "a transaction history page", resume: resume,
                                   retriesConcernThisOne: true) {
            case .answer(let answer):
                page = answer
            case .unknown where revision == nil && latest.isEmpty:
                report.unknown += 1
                return
            case .unknown:
                try takeUnseen(unseen, customer: customer, report: &report)
                return fail(customer, "Apple answered that it does not know its transaction history "
                            + "although it answered for its subscriptions or an earlier page", report: &report)
            case .failed(let why) where revision != nil && !restarted:
                log.write(LogEntry(.notice, "import: \(customer.id) (\(customer.source)): a history page asked "
                    + "with a revision failed (\(why)); reading its history from the first page again"))
                revision = nil
                restarted = true
                continue
            case .failed(let why):
                try takeUnseen(unseen, customer: customer, report: &report)
                return fail(customer, why, report: &report)
            }
            var verified: [(drop: [UInt8], item: Item)] = []
            for signed in page.signedTransactions {
                let drop = Array(signed.utf8)
                do {
                    let item = try session.judge.verify(drop)
                    verified.append(latest[item.key] ?? (drop, item))
                    unseen[item.key] = nil
                } catch {
                    return refuse(customer, "\(error)", report: &report)
                }
            }
            for (drop, item) in verified {
                try take(drop, item, customer: customer, report: &report)
            }
            guard page.hasMore, let next = page.revision else {
                try takeUnseen(unseen, customer: customer, report: &report)
                report.imported += 1
                return
            }
            revision = next
            try save(ImportCheckpoint(input: inputDigest, index: index, revision: next, refused: report.refused,
                                      failed: report.failed))
        }
    }

    /// The status answer's latest transactions no history page carried, newest
    /// last by key: after the history, or when it cannot be read.
    private func takeUnseen(_ unseen: [ItemKey: (drop: [UInt8], item: Item)], customer: Customer,
                            report: inout ImportReport) throws(SweepStop) {
        for (drop, item) in unseen.values.sorted(by: { $0.item.key.rawValue < $1.item.key.rawValue }) {
            try take(drop, item, customer: customer, report: &report)
        }
    }

    /// Drops (or lists) `drop` unless the destinations confirmed its content.
    private func take(_ drop: [UInt8], _ item: Item, customer: Customer,
                      report: inout ImportReport) throws(SweepStop) {
        report.transactions += 1
        guard case .changed(let why) = try session.judge.compare(item).0 else {
            report.confirmed += 1
            return
        }
        report.spooled += 1
        if let listing {
            listing(LogText.singleLine("\(customer.id)  transactionId \(item.key.rawValue)  originalTransactionId "
                                       + "\(item.fields.originalTransactionId ?? "-")  \(why)", limit: 400))
            return
        }
        try session.drop(drop, resume: "the next run goes on with \(customer.id) (\(customer.source))")
    }

    /// An answer about `customer` that did not verify: logged at once (a
    /// later kill must not lose it), counted, and the customer left there.
    private func refuse(_ customer: Customer, _ why: String, report: inout ImportReport) {
        report.refused += 1
        log.write(LogEntry(.error, "import: refused an answer for \(customer.id) (\(customer.source)): \(why); "
            + "nothing more of it is imported: import it again once the cause is found"))
    }

    /// A request about `customer` Apple refused: logged at once, counted,
    /// and the customer left there.
    private func fail(_ customer: Customer, _ why: String, report: inout ImportReport) {
        report.failed += 1
        log.write(LogEntry(.error, "import: \(customer.id) (\(customer.source)): \(why); nothing more of it is "
            + "imported: import it again"))
    }
}
