// DecodedInput: what InputDecoder makes of one dropped file.

/// What one input file holds once decoded.
enum DecodedInput: Sendable, Equatable {
    /// A single snapshot, delivered as one item (formats 1, 2, 3 and 5).
    case item(Item)
    /// A page of the transaction history (format 4): each signed transaction
    /// is split into a drop of its own and then taken like any other.
    case page(signedTransactions: [String])
    /// A StoreKit 1 receipt upload (format 6): intake stores the receipt in
    /// receipts/ once and splits the upload into a small part per purchase
    /// and one for the receipt item, each naming the stored receipt.
    case receipt(ReceiptSplit)
    /// A part of a receipt upload, naming a receipt in receipts/ (and one of
    /// its purchases): an item once that receipt is read (ReceiptLibrary).
    case receiptPart(ReceiptPart)
}
