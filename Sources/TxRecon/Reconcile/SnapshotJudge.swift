// SnapshotJudge: what `reconcile`, `import` and `lookup` do with each
// signed snapshot Apple answers: decode and verify it as intake would (the
// daemon's decoder and verifier, its claims), then compare it with what
// every destination confirmed (the ledger, SnapshotComparison). One place,
// so that the three commands can never judge the same answer differently.
// Not Sendable: the verifier owns OpenSSL state; one per command's thread.

final class SnapshotJudge {
    private let decoder = InputDecoder(acceptEnvelopes: false)
    /// nil with `Mode=none`, as in the daemon.
    private let verifier: SignedDataVerifier?
    let ledger: any Ledger

    init(policy: SignedDataPolicy?, ledger: any Ledger) {
        verifier = policy.map { SignedDataVerifier(policy: $0) }
        self.ledger = ledger
    }

    /// The item `drop` (format 1 or 3) makes, verified; the rejection
    /// intake would give it otherwise.
    func verify(_ drop: [UInt8]) throws(Rejection) -> Item {
        guard case .item(let item) = try decoder.decode(drop, verifyingWith: verifier) else {
            throw Rejection(.unsupportedContent, "Apple's answer holds something other than one transaction")
        }
        return item
    }

    /// The originalTransactionIds of a stored StoreKit 1 receipt's purchases
    /// (its bytes as a receipt upload holds them: format 6), in receipt
    /// order, once each; the receipt verified as intake verifies it.
    func receiptOriginals(_ bytes: [UInt8]) throws(Rejection) -> [String] {
        guard case .receipt(let split) = try decoder.decode(bytes, verifyingWith: verifier) else {
            throw Rejection(.unknownFormat, "the file is not a StoreKit 1 receipt (the base64 of an app receipt, "
                + "or {\"receipt\": \"…\"})")
        }
        var seen: Set<String> = []
        return split.purchases.compactMap(\.fields.originalTransactionId).filter { seen.insert($0).inserted }
    }

    /// What the destinations confirmed of `item`'s key, and whether `item` differs.
    func compare(_ item: Item) throws(SweepStop) -> (SnapshotComparison, confirmed: [LedgerRecord]) {
        let confirmed: [LedgerRecord]
        do {
            confirmed = try ledger.records(of: item.key)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot read the ledger: \(error)")
        }
        return (SnapshotComparison.compare(item, with: confirmed), confirmed)
    }
}
