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
