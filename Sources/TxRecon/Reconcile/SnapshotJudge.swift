// SnapshotJudge: what `reconcile`, `import` and `lookup` do with each
// signed snapshot Apple answers: decode and verify it as intake would (the
// daemon's decoder and verifier, its claims), then compare it with what
// each configured destination that takes it confirmed (the ledger,
// SnapshotComparison); and drop what changed into the spool. One place,
// so that the three commands can never judge the same answer differently.
// Not Sendable: the verifier owns OpenSSL state; one per command's thread.

final class SnapshotJudge {
    private let decoder = InputDecoder(acceptEnvelopes: false)
    /// The daemon's, with a policy that checks signatures (AppleAPISession
    /// refuses to start without one).
    private let verifier: SignedDataVerifier
    let ledger: any Ledger
    /// Every configured destination's name and `[Match]`.
    private let destinations: [(name: String, match: DestinationMatch)]

    init(policy: SignedDataPolicy, ledger: any Ledger, destinations: [(name: String, match: DestinationMatch)]) {
        verifier = SignedDataVerifier(policy: policy)
        self.ledger = ledger
        self.destinations = destinations
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
        let taking = destinations.filter { $0.match.accepts(item) }
        return (SnapshotComparison.compare(item, with: confirmed, destinations: taking.map(\.name)), confirmed)
    }
}
