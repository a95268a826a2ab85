// Ledger: what txrecon remembers of what each destination confirmed, long
// after done/ forgot it: per destination and key, the last version
// confirmed (LedgerRecord). Derived from done/, never the truth for what is
// pending; it can always be rebuilt from done/ (losing only what is older
// than DoneRetention=). docs/crash-consistency.md gives the ordering.
//
// One small protocol, so that a database shared by several hosts behind one
// load balancer (PostgreSQL) can take SQLite's place (SQLiteLedger) without
// touching the engine. An implementation is used by one thread at a time
// (LedgerService gives each of its threads a connection of its own).
// Reports: failures as LedgerError; logs nothing.

protocol Ledger: AnyObject {
    /// Records each confirmation unless the ledger already holds a newer
    /// version for its destination and key (a confirmation never moves a
    /// key back), or, with `replacingEqual` false, one as new (the catch-up
    /// from done/ knows less than the engine reported); one transaction,
    /// durable when this returns.
    func record(_ records: [LedgerRecord], replacingEqual: Bool) throws(LedgerError)

    /// The last version `destination` confirmed for `key`, if the ledger
    /// holds one, as the supersede rule compares it now (a receipt's
    /// purchase an earlier release recorded without its expiry:
    /// `ReceiptItems.confirmedVersion`).
    func confirmedVersion(at destination: String, of key: ItemKey) throws(LedgerError) -> ItemVersion?

    /// What each destination confirmed for `key`, by destination.
    func records(of key: ItemKey) throws(LedgerError) -> [LedgerRecord]

    /// The confirmations `query` selects, oldest first, at most `query.limit`.
    func history(_ query: LedgerQuery) throws(LedgerError) -> [LedgerRecord]

    /// Removes the confirmations older than `before` (ms since 1970): a
    /// key whose last confirmation is that old is forgotten
    /// (LedgerRetention=). Returns how many.
    func prune(confirmedBefore before: Int64) throws(LedgerError) -> Int

    /// Calls `body` with every subscription confirmed for `bundleID` in
    /// `environment` (an originalTransactionId with an expiresDate), grouped
    /// by customer (appTransactionId) where known: what `txrecon reconcile`
    /// asks Apple about.
    func forEachSubscription(bundleID: String, environment: String,
                             _ body: (KnownSubscription) -> Void) throws(LedgerError)

    /// Calls `body` with every destination and key it holds (LedgerKeyFilter's build).
    func forEachKey(_ body: (_ destination: String, _ key: ItemKey) -> Void) throws(LedgerError)

    /// Rows and size, for status, check-config and the metrics.
    func statistics() throws(LedgerError) -> LedgerStatistics

    /// The ctime (ns since 1970) up to which every delivered snapshot in
    /// done/ is recorded: the start-up catch-up reads only newer ones.
    func catchUpMark() throws(LedgerError) -> Int64
    func setCatchUpMark(_ mark: Int64) throws(LedgerError)
}

/// What `txrecon history` asks for; nil selects everything.
package struct LedgerQuery: Sendable, Equatable {
    package var originalTransactionId: String?
    package var appAccountToken: String?
    package var appTransactionId: String?
    package var productId: String?
    package var destination: String?
    /// ms since 1970, inclusive.
    package var since: Int64?
    /// ms since 1970, exclusive.
    package var until: Int64?
    package var limit = 10_000

    package init(originalTransactionId: String? = nil, appAccountToken: String? = nil, appTransactionId: String? = nil,
                 productId: String? = nil, destination: String? = nil, since: Int64? = nil, until: Int64? = nil,
                 limit: Int = 10_000) {
        self.originalTransactionId = originalTransactionId
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.productId = productId
        self.destination = destination
        self.since = since
        self.until = until
        self.limit = limit
    }
}

package struct LedgerStatistics: Sendable, Equatable {
    package var rows: Int64
    /// The database's bytes, its write-ahead log included.
    package var bytes: Int64
}

/// One subscription as the ledger knows it, across destinations and
/// renewals: what reconciliation needs to ask Apple about it and when.
package struct KnownSubscription: Sendable, Equatable {
    package var originalTransactionId: String
    /// The customer's, when any confirmed transaction named it.
    package var appTransactionId: String?
    /// The latest `expiresDate` confirmed, ms since 1970.
    package var expiresDate: Int64

    package init(originalTransactionId: String, appTransactionId: String?, expiresDate: Int64) {
        self.originalTransactionId = originalTransactionId
        self.appTransactionId = appTransactionId
        self.expiresDate = expiresDate
    }
}
