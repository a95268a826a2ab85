// The supersede rule without files: PendingItems.place is given the stored
// versions by a lookup the test answers, and returns the spool moves to make
// and the change its `apply` then makes.
import Testing
@testable import TxRecon

@Suite struct PendingItemsTests {
    typealias Move = PendingItems.SpoolMove
    typealias Superseded = PendingItems.Superseded

    static func drop(_ key: String, version: Int64, name: String, receivedAt: Int64 = 0) throws -> Drop {
        let body = #"{"id":"\#(key)","version":\#(version),"payload":{}}"#
        guard case let .item(item) = try InputDecoder(acceptEnvelopes: true).decode(Array(body.utf8)) else {
            throw TestFailure("envelope of \(key) does not decode")
        }
        return Drop(name: name, item: item, receivedAt: receivedAt)
    }

    struct TestFailure: Error {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Versions stored in the spool, and every location asked for.
    final class Stored {
        var versions: [SpoolLocation: ItemVersion] = [:]
        var asked: [SpoolLocation] = []

        func lookup(_ location: SpoolLocation) -> ItemVersion? {
            asked.append(location)
            return versions[location]
        }
    }

    static func version(_ primary: Int64) -> ItemVersion { ItemVersion(primary: primary) }

    /// `pending` with a fresh key placed and applied, as the engine does.
    static func placed(_ drop: Drop, into pending: inout PendingItems, inInbox: Bool = false) throws {
        let stored = Stored()
        let placement = try pending.place(drop, freshKeyWaitsInInbox: inInbox) { stored.lookup($0) }
        pending.apply(placement.change, now: .zero)
    }

    @Test func aReceiptsExtendedRenewalDateIsPlacedAndAnOlderReceiptAfterItIsSuperseded() throws {
        let (earlier, extended) = try ReceiptSplitPlanTests.earlierAndExtended()
        let stale = Drop(name: "earlier", item: try #require(earlier.purchases.first), receivedAt: 0)
        let news = Drop(name: "extended", item: try #require(extended.purchases.first), receivedAt: 0)
        /// Where `drop` goes when its destination confirmed `confirmed` (the
        /// ledger's row) or done/ holds `delivered`.
        func placement(_ drop: Drop, confirmed: ItemVersion? = nil,
                       delivered: ItemVersion? = nil) throws -> PendingItems.Placement {
            var drop = drop
            drop.confirmed = confirmed
            let stored = Stored()
            stored.versions[.done] = delivered
            var pending = PendingItems()
            return try pending.place(drop, freshKeyWaitsInInbox: false) { stored.lookup($0) }
        }
        let accepted: [Move] = [.accept(drop: "extended", key: news.item.key)]
        #expect(try placement(news, confirmed: stale.item.version).moves == accepted, "the ledger has the earlier expiry")
        #expect(try placement(news, delivered: stale.item.version) == PendingItems.Placement(
            moves: accepted, change: .fresh(news, inInbox: false)), "done/ alone has it")
        let superseded = PendingItems.Placement(moves: [.supersede(Superseded(stale, by: nil))], change: .none)
        #expect(try placement(stale, confirmed: news.item.version) == superseded, "the ledger has the extension")
        #expect(try placement(stale, delivered: news.item.version) == superseded)
        #expect(try placement(news, confirmed: news.item.version).change == .none, "the extension uploaded again")

        var pending = PendingItems()
        try Self.placed(news, into: &pending)
        let behind = try pending.place(stale, freshKeyWaitsInInbox: false) { _ in nil }
        #expect(behind == superseded, "the extension pending")
    }

    @Test func aFreshKeyIsAcceptedIntoQueueOrWaitsInNewWhileTheWindowHasRoom() throws {
        let drop = try Self.drop("k", version: 1, name: "n1")
        var pending = PendingItems()
        let stored = Stored()
        let queued = try pending.place(drop, freshKeyWaitsInInbox: false) { stored.lookup($0) }
        #expect(queued.moves == [.accept(drop: "n1", key: drop.item.key)])
        #expect(queued.change == .fresh(drop, inInbox: false))
        #expect(stored.asked == [.done], "a key neither pending nor held is checked against done/ only")
        #expect(pending.count == 0, "nothing changes before apply")

        let waiting = try pending.place(drop, freshKeyWaitsInInbox: true) { stored.lookup($0) }
        #expect(waiting.moves.isEmpty, "its file stays in new/")
        pending.apply(waiting.change, now: .seconds(7))
        let entry = try #require(pending.entries[drop.item.key])
        #expect(entry.inbox == "n1" && entry.cachedItem == drop.item && entry.deadline == .seconds(7))
        #expect(pending.inboxCount == 1 && pending.ready.first?.key == drop.item.key)
    }

    @Test func aDueAttemptGoesBeforeADueBulkOneAndBulkGoesWhenNothingElseIsDue() throws {
        var pending = PendingItems()
        var history = try Self.drop("h", version: 1, name: "h1")
        history.bulk = true
        let stored = Stored()
        pending.apply(try pending.place(history, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .zero)
        let news = try Self.drop("n", version: 1, name: "n1")
        pending.apply(try pending.place(news, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .seconds(5))
        #expect(pending.next(now: .seconds(5))?.key == news.item.key, "due later, but not bulk")
        #expect(pending.popNext(now: .seconds(5))?.key == news.item.key)
        #expect(pending.next(now: .seconds(5))?.key == history.item.key, "nothing else due: the history goes")

        var waiting = PendingItems()
        waiting.apply(try waiting.place(history, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .seconds(1))
        waiting.apply(try waiting.place(news, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .seconds(9))
        #expect(waiting.next(now: .zero)?.key == history.item.key, "none due: the earlier, to arm the timer for")
        #expect(waiting.next(now: .seconds(2))?.key == history.item.key, "the bulk one is due, the other not yet")
        #expect(waiting.next(now: .seconds(9))?.key == news.item.key)
    }

    @Test func aNewerSnapshotThatIsNotBulkLeavesTheBulkLane() throws {
        // A refund replacing a pending purchase of a receipt's history: due
        // with the rest, not behind every bulk part.
        var pending = PendingItems()
        var purchase = try Self.drop("p", version: 1, name: "p1")
        purchase.bulk = true
        let stored = Stored()
        pending.apply(try pending.place(purchase, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .zero)
        var other = try Self.drop("h", version: 1, name: "h1")
        other.bulk = true
        pending.apply(try pending.place(other, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .zero)
        let refund = try Self.drop("p", version: 2, name: "p2")
        pending.apply(try pending.place(refund, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .seconds(1))
        pending.dropOutdatedDeadlines()
        let news = try Self.drop("n", version: 1, name: "n1")
        pending.apply(try pending.place(news, freshKeyWaitsInInbox: false) { stored.lookup($0) }.change, now: .seconds(1))
        #expect(pending.entries[refund.item.key]?.bulk == false)
        #expect(pending.popNext(now: .seconds(1))?.key == refund.item.key, "in the lane of what is not bulk, due first")
        #expect(pending.popNext(now: .seconds(1))?.key == news.item.key)
    }

    @Test func aSnapshotNoNewerThanTheDeliveredOneGoesToDoneUndelivered() throws {
        for version: Int64 in [3, 5] {
            let drop = try Self.drop("k", version: version, name: "n\(version)")
            var pending = PendingItems()
            let stored = Stored()
            stored.versions[.done] = Self.version(5)
            let placement = try pending.place(drop, freshKeyWaitsInInbox: false) { stored.lookup($0) }
            #expect(placement == PendingItems.Placement(moves: [.supersede(Superseded(drop, by: nil))], change: .none))
        }
        let newer = try Self.drop("k", version: 6, name: "n6")
        var pending = PendingItems()
        let stored = Stored()
        stored.versions[.done] = Self.version(5)
        let placement = try pending.place(newer, freshKeyWaitsInInbox: false) { stored.lookup($0) }
        #expect(placement.moves == [.accept(drop: "n6", key: newer.item.key)])
    }

    @Test func aNewerSnapshotReplacesTheQueuedOneAndInheritsItsBackoff() throws {
        var pending = PendingItems()
        try Self.placed(try Self.drop("k", version: 1, name: "n1"), into: &pending)
        let key = try #require(ItemKey("k"))
        pending.entries[key]?.state.attempts = 4
        let newer = try Self.drop("k", version: 2, name: "n2", receivedAt: 99)
        let stored = Stored()
        let placement = try pending.place(newer, freshKeyWaitsInInbox: false) { stored.lookup($0) }
        #expect(placement.moves == [
            .supersede(Superseded(location: .queue, key: key, version: Self.version(1), kind: newer.item.kind,
                                  by: Self.version(2))),
            .accept(drop: "n2", key: key),
        ])
        #expect(stored.asked.isEmpty, "the pending entry's version is known")
        pending.apply(placement.change, now: .zero)
        let entry = try #require(pending.entries[key])
        #expect(entry.version == Self.version(2) && entry.receivedAt == 99 && entry.state.attempts == 4)

        let older = try Self.drop("k", version: 1, name: "n1-again")
        let outdated = try pending.place(older, freshKeyWaitsInInbox: false) { stored.lookup($0) }
        #expect(outdated.moves == [.supersede(Superseded(older, by: nil))] && outdated.change == .none)
    }

    @Test func aNewerSnapshotTakesTheWaitingFilesPlaceInNew() throws {
        var pending = PendingItems()
        try Self.placed(try Self.drop("k", version: 1, name: "n1"), into: &pending, inInbox: true)
        let newer = try Self.drop("k", version: 2, name: "n2")
        let placement = try pending.place(newer, freshKeyWaitsInInbox: true) { _ in nil }
        #expect(placement.moves == [.supersede(Superseded(location: .inbox("n1"), key: newer.item.key,
                                                          version: Self.version(1), kind: newer.item.kind,
                                                          by: Self.version(2)))])
        pending.apply(placement.change, now: .zero)
        #expect(pending.entries[newer.item.key]?.inbox == "n2" && pending.inboxCount == 1)
    }

    @Test func whileInFlightTheNewestSnapshotWaitsInNewAndSupersedesAnOlderWaitingOne() throws {
        var pending = PendingItems()
        try Self.placed(try Self.drop("k", version: 1, name: "n1"), into: &pending)
        let key = try #require(ItemKey("k"))
        pending.entries[key]?.inFlight = true

        let second = try Self.drop("k", version: 2, name: "n2")
        let parked = try pending.place(second, freshKeyWaitsInInbox: false) { _ in nil }
        #expect(parked == PendingItems.Placement(moves: [], change: .park(second)), "nothing moves during the attempt")
        pending.apply(parked.change, now: .zero)
        #expect(pending.entries[key]?.parked?.value == second && pending.entries[key]?.version == Self.version(1))

        let third = try Self.drop("k", version: 3, name: "n3")
        let replaced = try pending.place(third, freshKeyWaitsInInbox: false) { _ in nil }
        #expect(replaced.moves == [.supersede(Superseded(second, by: Self.version(3)))])
        pending.apply(replaced.change, now: .zero)

        let between = try Self.drop("k", version: 2, name: "n2b")
        let outdated = try pending.place(between, freshKeyWaitsInInbox: false) { _ in nil }
        #expect(outdated.moves == [.supersede(Superseded(between, by: nil))], "older than the parked one")
        #expect(pending.entries[key]?.parked?.value == third)
    }

    @Test func theSameFileReadAgainIsNeverASecondSnapshot() throws {
        var pending = PendingItems()
        let first = try Self.drop("k", version: 1, name: "n1")
        try Self.placed(first, into: &pending, inInbox: true)
        #expect(try pending.place(first, freshKeyWaitsInInbox: true) { _ in nil } == .unchanged,
                "its own file in new/ must not supersede itself")

        let key = first.item.key
        pending.entries[key]?.inFlight = true
        let parked = try Self.drop("k", version: 2, name: "n2")
        pending.apply(try pending.place(parked, freshKeyWaitsInInbox: true) { _ in nil }.change, now: .zero)
        #expect(try pending.place(parked, freshKeyWaitsInInbox: true) { _ in nil } == .unchanged)
    }

    @Test func aNewerSnapshotOfAHeldKeySupersedesTheHeldOneAndIsPending() throws {
        var pending = PendingItems()
        let key = try #require(ItemKey("k"))
        pending.held.insert(key)
        let stored = Stored()
        stored.versions[.hold] = Self.version(4)
        let equal = try Self.drop("k", version: 4, name: "n4")
        let outdated = try pending.place(equal, freshKeyWaitsInInbox: false) { stored.lookup($0) }
        #expect(outdated.moves == [.supersede(Superseded(equal, by: nil))] && outdated.change == .none)
        #expect(stored.asked == [.hold], "a held key is compared with hold/, not done/")

        let newer = try Self.drop("k", version: 5, name: "n5")
        let placement = try pending.place(newer, freshKeyWaitsInInbox: true) { stored.lookup($0) }
        #expect(placement.moves == [.supersede(Superseded(location: .hold, key: key, version: Self.version(4),
                                                          kind: newer.item.kind, by: Self.version(5)))])
        pending.apply(placement.change, now: .zero)
        #expect(!pending.held.contains(key) && pending.entries[key]?.inbox == "n5")
    }

    @Test func aHeldKeyWhoseHeldFileIsGoneIsComparedWithDone() throws {
        var pending = PendingItems()
        let key = try #require(ItemKey("k"))
        pending.held.insert(key)
        let stored = Stored()
        stored.versions[.done] = Self.version(4)
        let older = try Self.drop("k", version: 3, name: "n3")
        let placement = try pending.place(older, freshKeyWaitsInInbox: false) { stored.lookup($0) }
        #expect(placement.moves == [.supersede(Superseded(older, by: nil))] && placement.change == .none,
                "nothing older than the key's delivery goes out, held or not")
        #expect(stored.asked == [.hold, .done])
    }

    @Test func aRestoredEntrysVersionIsReadOnceAndAnUnreadableOneIsOlderThanAnything() throws {
        var pending = PendingItems()
        let key = try #require(ItemKey("k"))
        pending.add(key, PendingItems.Entry(state: DeliveryState(), deadline: .zero, receivedAt: 0))
        let stored = Stored()
        stored.versions[.queue] = Self.version(3)
        _ = try pending.place(try Self.drop("k", version: 2, name: "a"), freshKeyWaitsInInbox: false) {
            stored.lookup($0)
        }
        _ = try pending.place(try Self.drop("k", version: 1, name: "b"), freshKeyWaitsInInbox: false) {
            stored.lookup($0)
        }
        #expect(stored.asked == [.queue], "read once, then known")

        var unreadable = PendingItems()
        unreadable.add(key, PendingItems.Entry(state: DeliveryState(), deadline: .zero, receivedAt: 0))
        let any = try Self.drop("k", version: 0, name: "c")
        let placement = try unreadable.place(any, freshKeyWaitsInInbox: false) { _ in nil }
        #expect(placement.change == .replace(any, inInbox: false),
                "delivering too much is safe, too little is not")
    }

    @Test func forgettingAKeyReturnsItsParkedDropAndCountsItsFileInNew() throws {
        var pending = PendingItems()
        let first = try Self.drop("k", version: 1, name: "n1")
        try Self.placed(first, into: &pending, inInbox: true)
        pending.entries[first.item.key]?.inFlight = true
        let parked = try Self.drop("k", version: 2, name: "n2")
        pending.apply(try pending.place(parked, freshKeyWaitsInInbox: true) { _ in nil }.change, now: .zero)
        #expect(pending.forget(first.item.key) == parked)
        #expect(pending.count == 0 && pending.inboxCount == 0)
        #expect(pending.forget(first.item.key) == nil)
    }

    /// What a backlog costs per key: the dictionary's entry and the two
    /// heaps' (the schedule and the arrival order). 100,000 queued keys at
    /// start are the daemon's largest memory (docs/performance.md, "What this means for an operator"); a
    /// field added in the wrong place or a Duration kept again shows here.
    @Test func aPendingKeyStaysSmall() {
        #expect(MemoryLayout<PendingItems.Entry>.stride <= 72)
        #expect(MemoryLayout<DeadlineQueue.Entry>.stride <= 32)
    }
}
