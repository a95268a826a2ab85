// Reconciler: one run of `txrecon reconcile`: ask Apple for the statuses of
// the customers the schedule finds due, and drop into the spool each
// subscription whose latest snapshot differs from what the destinations
// confirmed.
//
// First the ledger is read once, for the customers due (ReconcileSchedule):
// one read transaction of seconds at a million subscriptions (the daemon
// keeps writing meanwhile; its write-ahead log is checkpointed once the read
// ends). A customer is everyone with one appTransactionId, else one
// subscription.
// Then, customer by customer, paced by the `RateLimiter`: one Get All
// Subscription Statuses call (it answers for all of the customer's
// subscription groups); every snapshot verified as intake verifies it (the
// daemon's verifier, the same claims); a customer with any snapshot that
// does not verify is skipped whole and counted refused, nothing of it
// spooled, and one whose request Apple refused (a 4xx) or kept failing
// (5xx past the backoffs: Apple may fail on that one account's data)
// counted failed: both stay due, and the run goes on with the others;
// RateLimiter.maximumServerFailures in a row failing so stop the run (75:
// Apple is down). The rest are compared with
// the ledger (SnapshotJudge) and the changed ones dropped as format 3
// (durable in new/); then the customer is marked checked. A kill at any
// instant leaves the customer unmarked and due again. An --all run marks its
// start, so that a run started again after a kill or a stop goes on with
// the customers not yet checked since, rather than from the first; one that
// went through its customers (refused or failed ones included: the exit
// status says so, and the schedule asks them when they are due) clears it, and a mark older than FullCycle= is not
// gone on from: `--all` after an incident must ask everyone, not those
// unchecked since an --all that stopped weeks ago.
//
// The reconcile only produces: the daemon verifies again, keys, supersedes
// and delivers what it drops. In a dry run nothing is dropped or marked;
// each changed snapshot goes to `listing`. Reports through the returned
// `ReconcileReport`, never by logging itself. Blocks (HTTP, fsync, sleeps):
// run it on a dedicated thread.

/// One run. Not Sendable: made, run and dropped on the reconcile's thread.
final class Reconciler {
    /// One customer due, with what the ledger knows of its subscriptions.
    struct Customer: Equatable {
        /// `app:<appTransactionId>`, or `subscription:<originalTransactionId>`.
        var id: String
        var subscriptions: [KnownSubscription]
        var reason: ReconcileReason
    }

    private let session: AppleAPISession
    private let state: any ReconcileStateStore
    private let fullCycle: Duration
    private let all: Bool
    /// The gaps reported and not yet settled (ReconcileGaps).
    private let gaps: [ReconcileGap]
    private let listing: ((String) -> Void)?
    /// On the session's clock, when this app's turn of the run ends
    /// (AppTurns); nil: none.
    private let deadline: Duration?

    private var sweep: SweepSettings { session.configuration.sweep }
    private var clock: any SweepClock { session.clock }

    init(session: AppleAPISession, state: any ReconcileStateStore, all: Bool, gaps: [ReconcileGap] = [],
         listing: ((String) -> Void)?, deadline: Duration? = nil) {
        self.session = session
        self.deadline = deadline
        self.state = state
        fullCycle = session.configuration.reconcile.fullCycle
        self.all = all
        self.gaps = gaps
        self.listing = listing
    }

    private var dryRun: Bool { listing != nil }

    /// Checks every customer due; blocks until done or stopped.
    func run() -> ReconcileReport {
        let now = clock.wallMilliseconds
        var report = ReconcileReport(environment: sweep.environment, dryRun: dryRun, all: all, startedAt: now)
        do throws(SweepStop) {
            let customers = try customersDue(now: now, report: &report)
            for customer in customers { report.due[customer.reason, default: 0] += 1 }
            for (index, customer) in customers.enumerated() {
                if let deadline, clock.now >= deadline {
                    // Unmarked, they stay due: the next run asks them, in
                    // the asking order (its expiry checks first).
                    throw SweepStop(kind: .temporary, reason: "this app's turn of the run is spent (a run shares its "
                        + "time, within txrecon-reconcile.service's TimeoutStartSec=, among the apps); the next run "
                        + "goes on with the \(customers.count - index) customers left")
                }
                try check(customer, report: &report)
            }
            if all, !dryRun { try state.setMark("all-started", nil) }
        } catch {
            report.stop = error
        }
        report.finishedAt = clock.wallMilliseconds
        return report
    }

    /// The customers the schedule finds due at `now` (every one with --all,
    /// but those an interrupted --all run already checked), in the order
    /// they are asked (`ReconcileReason.askingOrder`).
    func customersDue(now: Int64, report: inout ReconcileReport) throws(SweepStop) -> [Customer] {
        let firstRun: Int64
        if let mark = try ReconcileSchedule.mark(state.mark("first-run"), asOf: now) {
            firstRun = mark
        } else {
            // None yet, or one a clock far ahead wrote: the spread of
            // first checks starts now.
            firstRun = now
            if !dryRun { try state.setMark("first-run", now) }
        }
        var allSince: Int64?
        if all {
            if let started = try state.mark("all-started"), now - started < fullCycle.milliseconds, started <= now {
                allSince = started
                report.goesOnFrom = started
            } else {
                allSince = now
            }
            if !dryRun { try state.setMark("all-started", allSince) }
        }
        let schedule = ReconcileSchedule(fullCycle: fullCycle.milliseconds, firstRun: firstRun, gaps: gaps)
        // Each customer is judged as its last subscription has been read,
        // so that only the due ones are held (a million subscriptions are a
        // few hundred megabytes as values; the due ones of an hourly run, a
        // few thousand).
        var due: [Customer] = []
        var current: (id: String, subscriptions: [KnownSubscription])?
        var failure: SweepStop?
        func judge() {
            guard let (id, subscriptions) = current, failure == nil else { return }
            do {
                let lastChecked = try ReconcileSchedule.mark(state.lastChecked(id), asOf: now)
                let reason: ReconcileReason?
                // --all adds everyone not checked since it started; the
                // schedule's own reasons (a gap above all) still count, so
                // that a gap an --all run settles was checked after it.
                let scheduled = schedule.reason(customer: id, expiresDates: subscriptions.map(\.expiresDate),
                                                lastChecked: lastChecked, now: now)
                reason = allSince.flatMap { (lastChecked ?? .min) < $0 ? .all : nil } ?? scheduled
                if let reason { due.append(Customer(id: id, subscriptions: subscriptions, reason: reason)) }
            } catch {
                failure = error
            }
        }
        do {
            guard let bundleID = sweep.bundleID else { return [] }
            try session.judge.ledger.forEachSubscription(bundleID: bundleID, environment: sweep.environment.rawValue) { known in
                let id = known.appTransactionId.map { "app:" + $0 } ?? "subscription:" + known.originalTransactionId
                if current?.id == id {
                    current?.subscriptions.append(known)
                } else {
                    judge()
                    current = (id, [known])
                }
            }
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot read the ledger: \(error)")
        }
        judge()
        if let failure { throw failure }
        return ReconcileReason.askingOrder.flatMap { reason in due.filter { $0.reason == reason } }
    }

    /// Asks Apple about one customer, spools what changed, marks it checked.
    private func check(_ customer: Customer, report: inout ReconcileReport) throws(SweepStop) {
        let id = customer.subscriptions[0].originalTransactionId
        let asked = try session.ask({ session.client.subscriptionStatuses(id) },
                                    what: "a subscription status answer",
                                    resume: "the next run checks \(customer.id) and the customers after it",
                                    retriesConcernThisOne: true, serverFailuresConcernThisOne: true)
        report.customers += 1
        let statuses: SubscriptionStatuses
        switch asked {
        case .answer(let answer):
            statuses = answer
        case .unknown:
            report.unknown += 1
            try markChecked(customer)
            return
        case .failed(let why):
            // Left due: the next run asks again; the others go on.
            report.failed += 1
            report.leftDue.append(customer.subscriptions.map(\.expiresDate))
            if report.firstFailure == nil { report.firstFailure = "\(customer.id): \(why)" }
            return
        }
        var verified: [(snapshot: SubscriptionSnapshot, item: Item)] = []
        for snapshot in statuses.subscriptions {
            do {
                verified.append((snapshot, try session.judge.verify(snapshot.drop)))
            } catch {
                // Nothing of this customer is spooled: a forged answer may
                // sit beside genuine ones, and the next run asks again.
                report.refused += 1
                report.leftDue.append(customer.subscriptions.map(\.expiresDate))
                if report.firstRefusal == nil {
                    report.firstRefusal = "the answer for originalTransactionId \(snapshot.originalTransactionId) "
                        + "(\(customer.id)): \(error)"
                }
                return
            }
        }
        for (snapshot, item) in verified {
            report.subscriptions += 1
            switch try session.judge.compare(item).0 {
            case .agrees:
                report.agreed += 1
            case .changed(let why):
                report.changed += 1
                try spool(snapshot, item, why: why, customer: customer)
            }
        }
        try markChecked(customer)
    }

    private func spool(_ snapshot: SubscriptionSnapshot, _ item: Item, why: String,
                       customer: Customer) throws(SweepStop) {
        let line = "\(customer.id)  transactionId \(item.key.rawValue)  "
            + "originalTransactionId \(item.fields.originalTransactionId ?? "-")  \(why)"
        if let listing {
            listing(LogText.singleLine(line, limit: 400))
            return
        }
        try session.drop(snapshot.drop, resume: "the next run checks \(customer.id) again")
    }

    private func markChecked(_ customer: Customer) throws(SweepStop) {
        guard !dryRun else { return }
        try state.markChecked(customer.id, at: clock.wallMilliseconds)
    }
}
