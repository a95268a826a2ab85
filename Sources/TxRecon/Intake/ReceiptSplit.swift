// ReceiptSplit: a StoreKit 1 receipt upload of several purchases, to be
// split into one drop per purchase: the upload naming one purchase each.
//
// The parts are built only when intake writes them, one receipt at a time,
// after the receipt verified: every part repeats the whole upload (a real
// receipt of 187 purchases makes 19 MiB of parts), so building them while
// decoding let a forged upload of a few thousand tiny entries, padded to
// MaxFileSize=, cost gigabytes before its signature was looked at, and a
// batch of genuine ones held all their parts at once.

/// The parts of a receipt upload, described rather than built.
public struct ReceiptSplit: Sendable, Equatable {
    /// The upload's members as uploaded (for a bare base64 file, only
    /// `receipt`), without the member naming a purchase.
    let members: [(String, JSONValue)]
    /// The transaction ids of the purchases, one part each, in receipt order.
    let transactionIds: [String]

    /// What the parts of one receipt may take in all: a receipt of 100 KiB
    /// with 187 purchases (a real one) makes 19 MiB.
    static let maximumSize = 64 << 20

    public static func == (lhs: ReceiptSplit, rhs: ReceiptSplit) -> Bool {
        JSONValue.object(lhs.members) == JSONValue.object(rhs.members) && lhs.transactionIds == rhs.transactionIds
    }

    /// How many bytes the parts take in all, counted without building them:
    /// a part is the upload with one more string member, so it is the
    /// upload with that member empty plus the transaction id's JSON text.
    var size: Int {
        let emptyEntry = JSONValue.object(members + [(InputDecoder.receiptEntryMember, .string(""))]).serialized.count
        return transactionIds.reduce(0) { total, id in
            total + emptyEntry + JSONValue.string(id).serialized.count - 2
        }
    }

    /// Refuses a split whose parts would take more than `maximumSize`.
    func checkSize() throws(Rejection) {
        let size = self.size
        guard size <= ReceiptSplit.maximumSize else {
            throw Rejection("too-large", "the receipt (format 6) holds \(transactionIds.count) in-app purchases, and "
                + "one drop each would take \(size) bytes, more than \(ReceiptSplit.maximumSize); upload it "
                + "with \(InputDecoder.receiptEntryMember) naming the purchase to deliver")
        }
    }

    /// The parts, each the upload naming one purchase.
    var parts: [String] {
        transactionIds.map { id in
            JSONValue.object(members + [(InputDecoder.receiptEntryMember, .string(id))]).serializedString
        }
    }
}
