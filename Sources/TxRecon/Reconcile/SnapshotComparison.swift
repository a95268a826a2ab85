// SnapshotComparison: whether what Apple answers about a subscription is
// what the destinations confirmed, decided in one function:
//
//   no destination confirmed the transaction          changed (a renewal never notified,
//                                                     or a customer from before txrecon)
//   a confirmation's transaction digest differs       changed (refund, expiry moved, …)
//   or is unknown (recorded before ledger schema 3,
//   or a StoreKit 1 receipt's purchase)
//   Apple sends renewal info whose digest differs     changed (auto-renew turned off, …)
//   from a confirmation's, or it confirmed none
//   otherwise                                         agrees
//
// Digests leave out `signedDate` (ContentDigest), so a snapshot Apple signed
// afresh but unchanged agrees. Every confirmation of the key counts: one
// destination behind is reason enough, and the daemon's supersede rule then
// delivers the newer snapshot to each. Pure.

enum SnapshotComparison: Equatable {
    case agrees
    /// Why, in a few words for the dry run and the journal.
    case changed(String)

    static func compare(_ apple: Item, with confirmed: [LedgerRecord]) -> SnapshotComparison {
        guard !confirmed.isEmpty else { return .changed("no destination confirmed this transaction") }
        for record in confirmed {
            guard let digest = record.identity.transactionDigest else {
                return .changed("\(record.destination) confirmed it without a content digest")
            }
            if digest != apple.fields.transactionDigest {
                return .changed("the transaction differs from what \(record.destination) confirmed")
            }
            if let renewal = apple.fields.renewalDigest, record.identity.renewalDigest != renewal {
                return .changed(record.identity.renewalDigest == nil
                    ? "\(record.destination) confirmed no renewal info"
                    : "the renewal info differs from what \(record.destination) confirmed")
            }
        }
        return .agrees
    }
}
