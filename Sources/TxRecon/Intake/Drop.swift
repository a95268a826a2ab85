// Drop: a file from new/ as intake hands it to the engine, decoded (and
// verified), with its name and when its producer wrote it.

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

    package init(name: String, item: Item, receivedAt: Int64) {
        self.name = name
        self.item = item
        self.receivedAt = receivedAt
    }
}
