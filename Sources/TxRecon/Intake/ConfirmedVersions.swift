// ConfirmedVersions: which version of a key a destination has confirmed
// (answered 2xx, or acknowledged in its stream). Intake asks it before it
// writes the parts of a receipt upload, so that a receipt's unchanged
// history, sent again with every upload, is not written, read and
// superseded again each time.
//
// The one seam for the question (`Intake`'s `confirmations`), answered by
// DoneConfirmations: the ledger's record of what the destination confirmed
// (kept for LedgerRetention=, long after done/ forgets), and where the
// ledger knows none (no ledger, or a delivery its writer has not recorded
// yet) done/KEY's version, as the supersede rule reads it. An answer only
// ever skips work: a version not known to be confirmed is written, and the
// engine's supersede rule (PendingItems.place) stays the authority on what
// is delivered, pending or held.
// Reports nothing.

/// What the destinations confirmed, per key.
protocol ConfirmedVersions: Sendable {
    /// The version of the newest snapshot of `key` that the destination
    /// named `destination` confirmed, as far as is known; nil when none is.
    func confirmedVersion(of key: ItemKey, by destination: String) -> ItemVersion?
}

/// Makes the `ConfirmedVersions` intake asks, for the settings in force:
/// `reader` reads stored items as the engines do, verifying them under the
/// policy in force (done/KEY is the producer's inode, which it may still
/// write; a version that does not verify confirms nothing), files up to
/// `maximumSize` (MaxFileSize=). A ledger ignores both.
typealias ConfirmationSource = @Sendable (_ reader: StoredItemReader, _ maximumSize: Int) -> any ConfirmedVersions

/// The answer from the ledger, else from each destination's done/:
/// done/KEY, the key's last delivered snapshot, kept for DoneRetention=.
struct DoneConfirmations: ConfirmedVersions {
    /// Each destination's spool, by name.
    let spools: [String: Spool]
    let reader: StoredItemReader
    /// done/ files larger than this are not read (MaxFileSize=).
    let maximumSize: Int
    /// The ledger's record of (destination, key); nil: it has none.
    var ledger: @Sendable (_ destination: String, _ key: ItemKey) -> ItemVersion? = { _, _ in nil }

    /// The source for `routes`' spools and `ledger`.
    static func source(_ routes: [DeliveryRoute],
                       ledger: @escaping @Sendable (_ destination: String, _ key: ItemKey) -> ItemVersion?)
        -> ConfirmationSource {
        let spools = Dictionary(routes.map { ($0.name, $0.spool) }, uniquingKeysWith: { first, _ in first })
        return { reader, maximumSize in
            DoneConfirmations(spools: spools, reader: reader, maximumSize: maximumSize, ledger: ledger)
        }
    }

    func confirmedVersion(of key: ItemKey, by destination: String) -> ItemVersion? {
        // The ledger's record is the daemon's own (0600, written after the
        // move into done/); done/KEY is the producer's inode, so verified.
        if let recorded = ledger(destination, key) { return recorded }
        guard let spool = spools[destination],
              let bytes = try? spool.read(.done, key, maximumSize: maximumSize) else { return nil }
        let lowest = ItemVersion(primary: .min)
        // Against the lowest version: always verified.
        let version = reader.version(bytes, key: key, against: lowest)
        return version == lowest ? nil : version
    }
}
