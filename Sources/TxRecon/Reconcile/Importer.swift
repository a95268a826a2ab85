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
// In a dry run nothing is dropped or saved; what the destinations lack goes
// to `listing`. Reports through the returned `ImportReport`.

final class Importer {
    private let session: AppleAPISession
    private let state: ReconcileStateDirectory
    /// The input's customers, one id each, in order.
    private let ids: [String]
    /// The SHA-256 of the input (hex): which input a checkpoint belongs to.
    private let inputDigest: String
    private let listing: ((String) -> Void)?

    init(session: AppleAPISession, state: ReconcileStateDirectory, ids: [String], inputDigest: String,
         listing: ((String) -> Void)?) {
        self.session = session
        self.state = state
        self.ids = ids
        self.inputDigest = inputDigest
        self.listing = listing
    }

    private var dryRun: Bool { listing != nil }

    func run() -> ImportReport {
        var report = ImportReport(dryRun: dryRun, customers: ids.count, startedAt: session.clock.wallMilliseconds)
        let checkpoint = dryRun ? ImportCheckpoint(input: inputDigest) : state.importCheckpoint(input: inputDigest)
        report.resumedAt = checkpoint.line > 0 || checkpoint.revision != nil ? checkpoint.line : nil
        do throws(SweepStop) {
            for line in checkpoint.line..<max(ids.count, checkpoint.line) {
                let revision = line == checkpoint.line ? checkpoint.revision : nil
                try importCustomer(line: line, from: revision, report: &report)
                try save(ImportCheckpoint(input: inputDigest, line: line + 1))
            }
            try save(nil)
        } catch {
            report.stop = error
        }
        report.finishedAt = session.clock.wallMilliseconds
        return report
    }

    private func save(_ checkpoint: ImportCheckpoint?) throws(SweepStop) {
        guard !dryRun else { return }
        try state.saveImportCheckpoint(checkpoint)
    }

    private func importCustomer(line: Int, from startRevision: String?,
                                report: inout ImportReport) throws(SweepStop) {
        let id = ids[line]
        let resume = "the next run goes on with \(id) (line \(line + 1))"
        guard let statuses = try session.ask({ session.client.subscriptionStatuses(id) },
                                             what: "a subscription status answer",
                                             unknown: Reconciler.unknownTransactionCodes, resume: resume) else {
            // A customer without subscriptions has a history all the same.
            return try importHistory(line: line, from: startRevision, latest: [:], report: &report)
        }
        var latest: [ItemKey: (drop: [UInt8], item: Item)] = [:]
        for snapshot in statuses.subscriptions {
            do {
                let item = try session.judge.verify(snapshot.drop)
                latest[item.key] = (snapshot.drop, item)
            } catch {
                return refuse(id, line: line, error, report: &report)
            }
        }
        try importHistory(line: line, from: startRevision, latest: latest, report: &report)
    }

    private func importHistory(line: Int, from startRevision: String?,
                               latest: [ItemKey: (drop: [UInt8], item: Item)],
                               report: inout ImportReport) throws(SweepStop) {
        let id = ids[line]
        let resume = "the next run goes on with \(id) (line \(line + 1))"
        var revision = startRevision
        var unseen = latest
        while true {
            let answer = try session.ask({ session.client.transactionHistory(id, revision: revision) },
                                         what: "a transaction history page",
                                         unknown: Reconciler.unknownTransactionCodes, resume: resume)
            guard let page = answer else {
                report.unknown += 1
                return
            }
            var verified: [(drop: [UInt8], item: Item)] = []
            for signed in page.signedTransactions {
                let drop = Array(signed.utf8)
                do {
                    let item = try session.judge.verify(drop)
                    verified.append(latest[item.key] ?? (drop, item))
                    unseen[item.key] = nil
                } catch {
                    return refuse(id, line: line, error, report: &report)
                }
            }
            if !page.hasMore { verified += unseen.values.sorted { $0.item.key.rawValue < $1.item.key.rawValue } }
            for (drop, item) in verified {
                try take(drop, item, customer: id, report: &report)
            }
            guard page.hasMore, let next = page.revision else {
                report.imported += 1
                return
            }
            revision = next
            try save(ImportCheckpoint(input: inputDigest, line: line, revision: next))
        }
    }

    /// Drops (or lists) `drop` unless the destinations confirmed its content.
    private func take(_ drop: [UInt8], _ item: Item, customer: String, report: inout ImportReport) throws(SweepStop) {
        report.transactions += 1
        guard case .changed(let why) = try session.judge.compare(item).0 else {
            report.confirmed += 1
            return
        }
        report.spooled += 1
        if let listing {
            listing(LogText.singleLine("\(customer)  transactionId \(item.key.rawValue)  originalTransactionId "
                                       + "\(item.fields.originalTransactionId ?? "-")  \(why)", limit: 400))
            return
        }
        do {
            try session.submission.drop(drop)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot drop into the spool: \(error); the next run goes on with "
                + "\(customer)")
        }
    }

    private func refuse(_ id: String, line: Int, _ error: Rejection, report: inout ImportReport) {
        report.refused += 1
        if report.firstRefusal == nil {
            report.firstRefusal = "an answer for \(id) (line \(line + 1)): \(error)"
        }
    }
}
