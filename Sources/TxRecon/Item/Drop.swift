// Drop: a file from new/ as intake hands it to the engine, decoded (and
// verified), with its name, when its producer wrote it, and whether it is
// part of a bulk (a receipt's long history).

/// A drop from new/ that intake has decoded (and verified).
package struct Drop: Sendable, Equatable {
    /// The file's name in new/.
    var name: String
    var item: Item
    /// When the producer wrote the file (its mtime), ms since 1970.
    var receivedAt: Int64
    /// The last version the drop's destination confirmed for its key, as
    /// the ledger said when intake handed the drop over (nil: none, or the
    /// ledger cannot say): the supersede rule's memory beyond done/.
    var confirmed: ItemVersion?
    /// One of the many parts one drop was split into (a receipt's history
    /// of thousands of purchases): its attempts wait while other keys are
    /// due (PendingItems' bulk lane), and intake hands it over without
    /// waiting for room in the engine's window of fresh keys.
    var bulk: Bool

    package init(name: String, item: Item, receivedAt: Int64, bulk: Bool = false) {
        self.name = name
        self.item = item
        self.receivedAt = receivedAt
        self.bulk = bulk
    }
}
