// SnapshotComparison: whether what Apple answers about a transaction is what
// the destinations that take it confirmed, decided in one function:
//
//   no configured destination takes the transaction      agrees (nothing to deliver anywhere)
//   ([Match]: its kind and environment)
//   a destination that takes it confirmed nothing         changed (a renewal never notified,
//                                                         a customer from before txrecon)
//   its confirmation's transaction digest differs         changed (refund, expiry moved, …)
//   or is unknown (recorded before ledger schema 3,
//   or a StoreKit 1 receipt's purchase)
//   Apple sends renewal info whose digest differs         changed (auto-renew turned off, …)
//   from its confirmation's, or it confirmed none
//   otherwise                                             agrees
//
// Digests leave out `signedDate` (ContentDigest), so a snapshot Apple signed
// afresh but unchanged agrees. Only the destinations configured now that
// take the item count: a removed destination's rows, or those of one that
// takes only notifications, could never be brought up to date, and would
// make the same subscription "changed" at every check. One taking
// destination behind is reason enough: the spooled snapshot is newer than
// every confirmed one, and the daemon delivers it to each. Pure.

enum SnapshotComparison: Equatable {
    case agrees
    /// Why, in a few words for the dry run and the journal.
    case changed(String)

    /// - Parameter destinations: the configured destinations that take `apple`.
    static func compare(_ apple: Item, with confirmed: [LedgerRecord], destinations: [String]) -> SnapshotComparison {
        for destination in destinations {
            guard let record = confirmed.first(where: { $0.destination == destination }) else {
                return .changed("\(destination) has not confirmed this transaction")
            }
            guard let digest = record.identity.transactionDigest else {
                return .changed("\(destination) confirmed it without a content digest")
            }
            if digest != apple.fields.transactionDigest {
                return .changed("the transaction differs from what \(destination) confirmed")
            }
            if let renewal = apple.fields.renewalDigest, record.identity.renewalDigest != renewal {
                return .changed(record.identity.renewalDigest == nil
                    ? "\(destination) confirmed no renewal info"
                    : "the renewal info differs from what \(destination) confirmed")
            }
        }
        return .agrees
    }
}
