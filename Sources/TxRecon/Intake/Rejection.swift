// Rejection: why intake refused a spool file. The file moves to rejected/
// with a `.reason` beside it holding `code: detail`; the journal entry carries
// the code in TXRECON_REASON. Codes are stable: operators and scripts match them.

/// Why a dropped file cannot become an item.
public struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-matchable code such as `not-json` or `malformed-jws`.
    public var code: String
    /// One sentence for a person: which format was tried and what was wrong.
    public var detail: String

    public init(_ code: String, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}

/// What one input file holds once decoded.
public enum DecodedInput: Sendable, Equatable {
    /// A single snapshot, delivered as one item (formats 1, 2, 3 and 5).
    case item(Item)
    /// A page of the transaction history (format 4): each signed transaction
    /// is split into a drop of its own and then taken like any other.
    case page(signedTransactions: [String])
    /// A StoreKit 1 receipt upload with several in-app purchases (format
    /// 6): each part is the upload naming one purchase, split into a drop
    /// of its own and taken like any other.
    case receipt(ReceiptSplit)
}
