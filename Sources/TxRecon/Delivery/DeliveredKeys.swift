// DeliveredKeys: the engine's knowledge of which keys done/ may hold a
// delivered snapshot of, kept up as it delivers: the DoneIndex once built,
// the keys delivered while a build of it runs (its listing may miss them),
// and the count after which it is rebuilt. A value with one method per
// event; the engine starts the builds (off its thread) and hands their
// results back. Pure: no files, no threads, no log.

struct DeliveredKeys {
    /// nil when done/ could not be listed or is still being listed: then
    /// done/KEY is always read.
    private(set) var index: DoneIndex?
    /// Whether a build of a new index runs.
    private(set) var isBuilding = false
    private var deliveredSinceBuilt = 0
    private var deliveredWhileBuilding: [ItemKey] = []

    /// Whether done/ may hold `key`: no when the index rules it out.
    func mayHold(_ key: ItemKey) -> Bool { index?.mayContain(key) ?? true }

    /// A build is starting; false when one already runs.
    mutating func buildStarts() -> Bool {
        guard !isBuilding else { return false }
        isBuilding = true
        deliveredWhileBuilding = []
        return true
    }

    /// The build's index, with the keys delivered meanwhile added.
    mutating func built(_ index: DoneIndex) {
        isBuilding = false
        for key in deliveredWhileBuilding { index.add(key) }
        deliveredSinceBuilt = deliveredWhileBuilding.count
        deliveredWhileBuilding = []
        self.index = index
    }

    /// The build failed: an older index still never says "no" wrongly, so
    /// it stays, and the next build comes only after as many deliveries.
    mutating func buildFailed() {
        isBuilding = false
        deliveredSinceBuilt = 0
        deliveredWhileBuilding = []
    }

    /// done/`key` now holds a delivered snapshot; true when the index has
    /// taken `DoneIndex.capacity` keys since it was built and should be
    /// rebuilt from done/ (which forgets what DoneReaper removed meanwhile).
    mutating func delivered(_ key: ItemKey) -> Bool {
        if isBuilding { deliveredWhileBuilding.append(key) }
        guard let index else { return false }
        index.add(key)
        deliveredSinceBuilt += 1
        return deliveredSinceBuilt >= DoneIndex.capacity
    }
}
