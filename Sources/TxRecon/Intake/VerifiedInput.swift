// VerifiedInput: what a file in the spool is once decoded and verified, and
// ItemReadFailure: why reading one failed, for good or only for now. Beside
// the decoder (which knows no spool) because a receipt part is read through
// receipts/, whose faults are the spool's.

/// What a file is once decoded and verified, a receipt part read through the
/// receipt it names (ReceiptLibrary): what intake and the engines act on. No
/// part is left: it is its purchase, or it failed.
enum VerifiedInput: Sendable, Equatable {
    case item(Item)
    case page(signedTransactions: [String])
    case receipt(ReceiptSplit)
}

/// Why a file is not an item: for good, or only for now.
enum ItemReadFailure: Error, Equatable {
    /// It does not decode or verify, or names what receipts/ does not hold:
    /// set aside (intake) or held (an attempt).
    case rejected(Rejection)
    /// The receipt it names could not be read just now (EIO, EMFILE, ENOMEM,
    /// …): the file stays where it is and is read again later, never
    /// rejected for a passing fault.
    case unreadable(SpoolError)
}
