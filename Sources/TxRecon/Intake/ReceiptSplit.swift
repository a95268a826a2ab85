// ReceiptSplit: a StoreKit 1 receipt upload as the decoder took it apart,
// for intake to store and split; and ReceiptPart, one part of such an
// upload as intake writes it into new/.
//
// The receipt is stored once, in receipts/ under the SHA-256 of its bytes
// (ReceiptStore); each part only names it:
//
//   {"receiptSha256": "<hex>", "txreconReceiptEntry": "<transaction id>", …context}
//                                                        one purchase
//   {"receiptSha256": "<hex>", …context}                 the receipt item
//
// so a part is a hundred bytes and the upload's context (at most 4 KiB)
// whatever the receipt's size, and an upload of 5,000 purchases costs its
// receipt once, not 5,000 times. Reading a part back (ReceiptLibrary) reads
// the receipt it names, checks it against its name, verifies it (once per
// receipt and policy) and takes the named entry, so a part is worth
// exactly what its receipt is. Pure.

/// A receipt upload, decoded: its bytes, what they say, the app's context,
/// and one item per purchase, checked, but without the receipt's name
/// (intake hashes the receipt and sets it).
struct ReceiptSplit: Sendable, Equatable {
    /// The receipt's bytes (DER, or Xcode's BER), what receipts/ stores.
    var der: [UInt8]
    var receipt: AppReceipt
    /// The upload's other members, delivered as `unverified`; nil for none.
    var context: JSONValue?
    /// One item per in-app purchase, in receipt order.
    var purchases: [Item]

    /// The part naming `entry` of the receipt `receiptSha256`, or with
    /// `entry` nil the receipt item's part; the context's members follow in
    /// their order, so that the part reads back with the same context.
    static func part(receiptSha256: String, entry: String?, context: JSONValue?) -> [UInt8] {
        var members: [(String, JSONValue)] = [(InputDecoder.receiptNameMember, .string(receiptSha256))]
        if let entry { members.append((InputDecoder.receiptEntryMember, .string(entry))) }
        members += context?.objectValue ?? []
        return JSONValue.object(members).serialized
    }
}

/// A part of a receipt upload, as the decoder read it: which stored receipt
/// it names, which purchase (nil: the receipt item), and the context.
struct ReceiptPart: Sendable, Equatable {
    /// The SHA-256 of the receipt, in lowercase hex: its name in receipts/.
    var receiptSha256: String
    /// The transaction id of the purchase; nil for the receipt item.
    var entry: String?
    var context: JSONValue?

    /// Whether `text` is a name receipts/ could hold: 64 lowercase hex digits.
    static func isReceiptName(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
    }
}
