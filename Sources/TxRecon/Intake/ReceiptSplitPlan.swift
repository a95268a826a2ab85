// ReceiptSplitPlan: which parts a verified receipt upload becomes, decided
// here and nowhere else, before anything is written.
//
//   an item no destination's [Match] takes         no part (all of them:
//                                                  the upload is rejected,
//                                                  no-destination)
//   an item every destination that takes it        no part: the receipt's
//     confirmed at its version or a newer one      unchanged history
//   an item every destination that takes it        no part: an identical
//     confirmed, or has pending, at its version    upload's parts are still
//     or a newer one                               on their way
//   any other                                      a part
//
// The items are the receipt item (first: it tends to reach the backend
// before its purchases, though nothing orders different keys) and one per
// purchase in receipt order. The receipt's purchases all share a kind and an
// environment, so a [Match] takes all of them or none; the receipt item has
// a kind of its own (appstore.receipt-file). What "confirmed" means is the
// ConfirmedVersions seam's; what is pending, the engines' answer at the
// moment of the split (a burst of identical uploads would otherwise write
// a full set of parts each, only to supersede them). A version not known to
// be confirmed or pending is written, and the engine's supersede rule
// decides what becomes of it.
// Pure: touches no files, reports nothing.

struct ReceiptSplitPlan: Equatable {
    /// The items to write a part for, in order.
    var items: [Item]
    /// Items not written because every destination that takes them has
    /// confirmed them at their version or newer.
    var confirmed = 0
    /// Items not written because every destination that takes them has
    /// confirmed them or has them pending, some pending, at their version
    /// or newer.
    var pending = 0
    /// Items not written because no destination takes them.
    var untaken = 0

    /// Nothing to write, and not because it was all delivered: no
    /// destination takes anything of the upload.
    var takenByNone: Bool { items.isEmpty && confirmed == 0 && pending == 0 }

    /// The plan for `split`, whose receipt is named `receiptSha256`, given
    /// the destinations' names and matches in route order, and the
    /// versions pending at each destination (by name).
    init(_ split: ReceiptSplit, receiptSha256: String, destinations: [(name: String, match: DestinationMatch)],
         confirmations: any ConfirmedVersions, pendingVersions: [String: [ItemKey: ItemVersion]] = [:]) {
        var candidates = [ReceiptItems.receipt(split.receipt, der: split.der, receiptSha256: receiptSha256,
                                               context: split.context)]
        candidates.reserveCapacity(split.purchases.count + 1)
        for var purchase in split.purchases {
            purchase.fields.receiptSha256 = receiptSha256
            candidates.append(purchase)
        }
        items = []
        items.reserveCapacity(candidates.count)
        for item in candidates {
            let takers = destinations.filter { $0.match.accepts(item) }
            func isConfirmed(by destination: String) -> Bool {
                confirmations.confirmedVersion(of: item.key, by: destination).map { $0 >= item.version } ?? false
            }
            func isPending(at destination: String) -> Bool {
                pendingVersions[destination]?[item.key].map { $0 >= item.version } ?? false
            }
            if takers.isEmpty {
                untaken += 1
            } else if takers.allSatisfy({ isConfirmed(by: $0.name) }) {
                confirmed += 1
            } else if takers.allSatisfy({ isConfirmed(by: $0.name) || isPending(at: $0.name) }) {
                pending += 1
            } else {
                items.append(item)
            }
        }
    }
}
