// PendingItems: the keys waiting for delivery as the engine knows them:
// one entry per pending key (at most one pending snapshot each), the held
// keys, the order of the next attempts the engine dispatches from, and the
// arrival order its status reports.
//
// The next attempts are in two lanes, each earliest first: bulk (the parts
// of a split into more than a batch, a receipt's history of thousands of
// purchases) and the rest. A due attempt of the rest goes before a due bulk
// one, so a receipt of 5,000 purchases never holds up an unrelated item
// behind all of them; bulk goes whenever nothing else is due (`next`).
// Which drop is bulk is intake's to say (Drop.bulk).
//
// `place` is the supersede rule, decided here and nowhere else: it looks at
// what stands at a new snapshot's key and returns the spool moves to make,
// in order, and the change to make here once they are made. It touches no
// file: the versions stored in queue/, hold/ and done/ come from a lookup
// the caller passes (the engine reads the files; tests answer in memory).
// The engine makes the moves, then `apply`s the change.
// Reports: nothing; the engine logs the moves it makes.

struct PendingItems {
    /// Keys at most this many pending keep intake's decoded item for their
    /// first attempt, which then neither reads nor decodes queue/KEY again;
    /// beyond it (a backlog) items are read back when their turn comes, so
    /// memory stays small.
    static let itemCacheLimit = 4096

    /// One pending key. Kept small (a backlog may hold 100,000; the
    /// DenseDictionary holding the entries keeps room for up to twice their
    /// count while it grows, four times while it shrinks): what is large or
    /// rare is boxed, and the stored properties are
    /// declared in the order that leaves no padding (Swift lays a struct out
    /// in declaration order: the one-byte ones after `version`'s flag, then
    /// the words), 72 bytes where 96 were at 00ce5c2.
    struct Entry {
        /// nil until the file is read (entries restored at start are not read).
        var version: ItemVersion?
        var kind: ItemKind?
        var inFlight = false
        /// Whether queue/KEY.state may exist (restored with one, or an attempt failed).
        var hasStateFile = false
        /// Whether the last attempt failed because of the backend (not the
        /// spool): such keys are tried at once when the backend recovers.
        var waitsForBackend = false
        /// Its attempts are in the bulk lane (Drop.bulk).
        var bulk = false
        /// The failed-attempt history; boxed (nil while there is none), as
        /// a backlog of fresh or restored keys mostly has none.
        private var failures: Boxed<DeliveryState>?
        var state: DeliveryState {
            get { failures?.value ?? DeliveryState() }
            set { failures = newValue == DeliveryState() ? nil : Boxed(newValue) }
        }
        /// Monotonic time of the next attempt, in the engine's nanoseconds
        /// as DeadlineQueue keeps it (the same value on both sides, and half
        /// a Duration's room).
        var deadline: Duration {
            get { .nanoseconds(deadlineNanoseconds) }
            set { deadlineNanoseconds = newValue.wholeNanoseconds }
        }
        private var deadlineNanoseconds: Int64
        var receivedAt: Int64
        /// Intake's decoded item and where its file is, boxed (one pointer
        /// in the entry, nil for a backlog).
        private var intaken: Boxed<Intaken>?
        /// Intake's decoded item, for the first attempt (see itemCacheLimit),
        /// and for every attempt while `inbox` is set.
        var cachedItem: Item? { intaken?.value.item ?? nil }
        /// The file's name in new/ while the key has not been moved into
        /// queue/ (a fresh key before its first attempt failed). Its attempts
        /// send `cachedItem`, never new/NAME read again: new/ is the
        /// producers' to change, what was verified is what goes out.
        var inbox: String? { intaken?.value.inbox }
        /// A newer snapshot that arrived while this key was in flight; it
        /// stays in new/ (so a crash loses nothing) until the attempt ends.
        var parked: Boxed<Drop>?

        init(version: ItemVersion? = nil, kind: ItemKind? = nil, state: DeliveryState, deadline: Duration,
             receivedAt: Int64, hasStateFile: Bool = false, waitsForBackend: Bool = false) {
            self.version = version
            self.kind = kind
            deadlineNanoseconds = deadline.wholeNanoseconds
            self.receivedAt = receivedAt
            self.hasStateFile = hasStateFile
            self.waitsForBackend = waitsForBackend
            self.state = state
        }

        mutating func keep(_ item: Item, inbox: String?) { intaken = Boxed(Intaken(item: item, inbox: inbox)) }

        mutating func forgetItem() { intaken = nil }

        /// Forgets intake's item but not where its file is: the next
        /// attempt reads the file (new/NAME, or queue/KEY) and verifies it
        /// again, under the configuration a reload put in force.
        mutating func forgetVerifiedItem() {
            guard let inbox else { return forgetItem() }
            intaken = Boxed(Intaken(item: nil, inbox: inbox))
        }

        /// An attempt failed with `reason` (and the HTTP `status`, if
        /// any): one more attempt counted, the next one `delay` from now
        /// (`now`: the engine clock; `wall`: ms since 1970), as its failure
        /// record will say. `waitsForBackend`: the backend failed it (the
        /// key is due at once when the backend recovers).
        mutating func failed(reason: String, status: Int?, nextAfter delay: Duration, now: Duration, wall: Int64,
                             waitsForBackend: Bool) {
            // One write of the boxed state, not one per field.
            var failures = state
            failures.attempts += 1
            failures.nextAttemptAt = wall + delay.milliseconds
            failures.delayMilliseconds = delay.milliseconds
            failures.lastError = reason
            failures.lastStatus = status
            state = failures
            deadline = now + delay
            self.waitsForBackend = waitsForBackend
        }
    }

    private struct Intaken: Sendable {
        /// nil once a reload made intake's verification stale.
        var item: Item?
        var inbox: String?
    }

    /// A snapshot the supersede rule sends to done/ undelivered.
    struct Superseded: Equatable {
        enum Location: Equatable {
            /// new/NAME: a drop, or a fresh key's file still waiting there.
            case inbox(String)
            case queue
            case hold
        }
        var location: Location
        var key: ItemKey
        var version: ItemVersion
        var kind: ItemKind?
        /// The version that supersedes it; nil when it is superseded by a
        /// snapshot at least as new that is already pending, held or delivered.
        var by: ItemVersion?

        /// The file's name in new/, for the log.
        var inboxName: String? {
            if case let .inbox(name) = location { return name }
            return nil
        }
    }

    /// One spool operation of a placement.
    enum SpoolMove: Equatable {
        /// The snapshot goes to done/ as superseded.
        case supersede(Superseded)
        /// new/NAME becomes queue/KEY.
        case accept(drop: String, key: ItemKey)
    }

    /// What `apply` makes of a placement once its moves are made.
    enum Change: Equatable {
        /// Nothing pending changes (the drop was seen before, or is outdated).
        case none
        /// The key is in flight: the drop waits in new/ until the attempt ends.
        case park(Drop)
        /// The drop replaces the pending snapshot; `inInbox`: its file stays
        /// in new/ (the one it replaces did too), else it is in queue/ now.
        case replace(Drop, inInbox: Bool)
        /// The key was not pending: the drop is, due now.
        case fresh(Drop, inInbox: Bool)
    }

    struct Placement: Equatable {
        var moves: [SpoolMove]
        var change: Change

        static let unchanged = Placement(moves: [], change: .none)
    }

    /// The version stored for the drop's key in a location (queue/, hold/
    /// or done/), nil when there is none; asked only where the rule needs it.
    typealias StoredVersion = (SpoolLocation) throws(SpoolError) -> ItemVersion?

    var entries = DenseDictionary<ItemKey, Entry>()
    var held = Set<ItemKey>()
    /// Next attempts, earliest first; lazily pruned (see `isCurrent`). The
    /// bulk lane's are in `bulkReady`; `schedule` picks the lane, `next`
    /// the attempt.
    var ready = DeadlineQueue()
    var bulkReady = DeadlineQueue()
    var arrivals = ArrivalOrder()
    /// Entries with `inbox` set; whoever clears an entry's inbox counts it.
    var inboxCount = 0
    /// Replays asked for while their key was in flight, decided when its
    /// attempt has ended (OperatorCommands.replay).
    var replaysAwaitingAttempt: [ItemKey: DeliveredSnapshot] = [:]

    var count: Int { entries.count }

    /// The supersede rule: at most one pending snapshot per key, and only a
    /// newer one replaces it; an older or equal one (than the pending, the
    /// held, the last one the destination confirmed as the ledger remembers
    /// it, or the last delivered still in done/) goes to done/ undelivered.
    /// A fresh key's file stays in new/ when `freshKeyWaitsInInbox`, else it
    /// is accepted into queue/. Caches a pending entry's version it had to
    /// look up; otherwise changes nothing until `apply`.
    mutating func place(_ drop: Drop, freshKeyWaitsInInbox: Bool,
                        storedVersion: StoredVersion) throws(SpoolError) -> Placement {
        let key = drop.item.key
        let version = drop.item.version
        // Built only when needed: most drops are fresh keys.
        var outdated: Placement { Placement(moves: [.supersede(Superseded(drop, by: nil))], change: .none) }
        if var entry = entries[key] {
            // The parked drop, or the key's own file in new/, read again
            // (a rescan, a repeated event): the same file, not a second
            // snapshot, and must not supersede itself, which would lose it.
            if entry.inbox == drop.name { return .unchanged }
            if let parked = entry.parked?.value, parked.name == drop.name { return .unchanged }
            let current: ItemVersion
            if let known = entry.version {
                current = known
            } else {
                current = try storedVersion(.queue) ?? ItemVersion(primary: .min)
                entry.version = current
                entries[key] = entry
            }
            guard version > current else { return outdated }
            if entry.inFlight {
                guard let parked = entry.parked?.value else { return Placement(moves: [], change: .park(drop)) }
                guard version > parked.item.version else { return outdated }
                return Placement(moves: [.supersede(Superseded(parked, by: version))], change: .park(drop))
            }
            if let inbox = entry.inbox {
                // Still waiting in new/: the newer file takes its place there.
                let old = Superseded(location: .inbox(inbox), key: key, version: current, kind: entry.kind, by: version)
                return Placement(moves: [.supersede(old)], change: .replace(drop, inInbox: true))
            }
            // The replacement inherits the key's backoff (and its .state
            // file): a new version does not make a failing backend work.
            let old = Superseded(location: .queue, key: key, version: current, kind: entry.kind, by: version)
            return Placement(moves: [.supersede(old), .accept(drop: drop.name, key: key)],
                             change: .replace(drop, inInbox: false))
        }
        var moves: [SpoolMove] = []
        // A held key whose hold/KEY is gone (moved by hand) or unreadable
        // is compared with done/ like any other (a release of a file that
        // is gone forgets the key; see OperatorCommands).
        let heldVersion = !held.isEmpty && held.contains(key) ? try storedVersion(.hold) : nil
        if let heldVersion {
            guard version > heldVersion else { return outdated }
            moves.append(.supersede(Superseded(location: .hold, key: key, version: heldVersion,
                                               kind: drop.item.kind, by: version)))
        } else if let confirmed = drop.confirmed, version <= confirmed {
            // Confirmed there before, however long ago (the ledger).
            return Placement(moves: [.supersede(Superseded(drop, by: nil))], change: .none)
        } else if let delivered = try storedVersion(.done), version <= delivered {
            return outdated
        }
        if freshKeyWaitsInInbox { return Placement(moves: moves, change: .fresh(drop, inInbox: true)) }
        moves.append(.accept(drop: drop.name, key: key))
        return Placement(moves: moves, change: .fresh(drop, inInbox: false))
    }

    /// Makes a placement's change, once its moves are made; a fresh key is
    /// due at `now`.
    mutating func apply(_ change: Change, now: Duration) {
        switch change {
        case .none:
            return
        case let .park(drop):
            entries[drop.item.key]?.parked = Boxed(drop)
        case let .replace(drop, inInbox):
            let key = drop.item.key
            guard var entry = entries[key] else { return }
            if inInbox { entry.keep(drop.item, inbox: drop.name) } else { keepIfRoom(drop.item, in: &entry) }
            entry.version = drop.item.version
            entry.kind = drop.item.kind
            entry.receivedAt = drop.receivedAt
            let leavesBulk = entry.bulk && !drop.bulk
            entry.bulk = drop.bulk
            entries[key] = entry
            // A snapshot that is news (a refund replacing a purchase of a
            // receipt's history) waits no longer behind the bulk lane; its
            // place there is dropped as not current once it is attempted.
            if leavesBulk { ready.push(key, at: entry.deadline) }
            arrivals.note(key, receivedAt: drop.receivedAt)
        case let .fresh(drop, inInbox):
            let key = drop.item.key
            if !held.isEmpty { held.remove(key) }
            var entry = Entry(version: drop.item.version, kind: drop.item.kind, state: DeliveryState(), deadline: now,
                              receivedAt: drop.receivedAt)
            entry.bulk = drop.bulk
            if inInbox {
                // Logged when its first attempt ends: as delivered from new/,
                // or as accepted once that attempt moved it into queue/.
                entry.keep(drop.item, inbox: drop.name)
                inboxCount += 1
            } else {
                keepIfRoom(drop.item, in: &entry)
            }
            entries[key] = entry
            schedule(key, at: now)
            arrivals.note(key, receivedAt: drop.receivedAt)
        }
    }

    /// A reload changed how items are verified: every key not in flight
    /// has its file read and verified again at its next attempt, rather
    /// than send what intake verified under the old configuration (an app
    /// removed, an environment dropped, envelopes no longer accepted). A
    /// key in flight finishes with what it sent.
    mutating func forgetVerifiedItems() {
        for position in 0..<entries.count where !entries[position: position].inFlight {
            entries[position: position].forgetVerifiedItem()
        }
    }

    /// Schedules `key`'s next attempt at `deadline`, in its entry's lane.
    mutating func schedule(_ key: ItemKey, at deadline: Duration) {
        if entries[key]?.bulk == true { bulkReady.push(key, at: deadline) } else { ready.push(key, at: deadline) }
    }

    /// The attempt to start next as of `now`: the earliest due one that is
    /// not bulk, else the earliest due bulk one, else (nothing due) the
    /// earlier of the two lanes' first, when one becomes due. Call
    /// `dropOutdatedDeadlines` first.
    func next(now: Duration) -> DeadlineQueue.Entry? {
        nextLane(now: now).map { $0 ? bulkReady.first : ready.first } ?? nil
    }

    /// Takes `next(now:)` off its lane.
    mutating func popNext(now: Duration) -> DeadlineQueue.Entry? {
        guard let bulk = nextLane(now: now) else { return nil }
        return bulk ? bulkReady.popFirst() : ready.popFirst()
    }

    /// Whether `next(now:)` is the bulk lane's; nil when both are empty.
    private func nextLane(now: Duration) -> Bool? {
        switch (ready.first, bulkReady.first) {
        case (nil, nil): return nil
        case (_?, nil): return false
        case (nil, _?): return true
        case let (other?, bulk?):
            if other.deadline <= now { return false }
            if bulk.deadline <= now { return true }
            return bulk.deadline < other.deadline
        }
    }

    /// A queued key's first attempt sends intake's item unless the backlog
    /// is large (see itemCacheLimit).
    private func keepIfRoom(_ item: Item, in entry: inout Entry) {
        if entries.count < Self.itemCacheLimit { entry.keep(item, inbox: nil) } else { entry.forgetItem() }
    }

    /// Adds a key restored from the spool or released by the operator, due
    /// at its entry's deadline.
    /// The keys queue/ held at start, each due at its persisted next
    /// attempt: a restart neither forgets nor resets the backoff. A time
    /// further away than the delay planned for it (or, for states that do
    /// not record it, than `longestDelay`), as after the wall clock jumped
    /// back, is pulled in. `now`: the engine clock; `wall`: ms since 1970.
    mutating func restore(_ files: [QueuedFile], now: Duration, wall: Int64, longestDelay: Duration) {
        entries.reserveCapacity(entries.count + files.count)
        for file in files {
            let state = file.state ?? DeliveryState()
            var deadline = now
            if let next = state.nextAttemptAt, next > wall {
                let planned = state.delayMilliseconds.map { Duration.milliseconds($0) } ?? longestDelay
                deadline = now + min(.milliseconds(next - wall), planned, longestDelay)
            }
            add(file.key, Entry(state: state, deadline: deadline, receivedAt: file.receivedAt,
                                hasStateFile: file.state != nil, waitsForBackend: state.attempts > 0))
        }
    }

    /// The backend answered again: every key that waits only because it
    /// failed is due `now` instead of at its next step. Returns how many.
    mutating func wakeWaitingForBackend(now: Duration) -> Int {
        var woken: [ItemKey] = []
        for (key, entry) in entries where entry.waitsForBackend && !entry.inFlight && entry.deadline > now {
            woken.append(key)
        }
        for key in woken {
            entries[key]?.deadline = now
            entries[key]?.waitsForBackend = false
            schedule(key, at: now)
        }
        return woken.count
    }

    mutating func add(_ key: ItemKey, _ entry: Entry) {
        entries[key] = entry
        schedule(key, at: entry.deadline)
        arrivals.note(key, receivedAt: entry.receivedAt)
    }

    /// Drops a key's entry; returns its parked drop, if any.
    @discardableResult
    mutating func forget(_ key: ItemKey) -> Drop? {
        guard let entry = entries.removeValue(forKey: key) else { return nil }
        if entry.inbox != nil { inboxCount -= 1 }
        return entry.parked?.value
    }

    /// Whether a scheduled attempt is still the key's next one (it may have
    /// been rescheduled, started, or left).
    func isCurrent(_ scheduled: DeadlineQueue.Entry) -> Bool {
        guard let entry = entries[scheduled.key] else { return false }
        return !entry.inFlight && entry.deadline == scheduled.deadline
    }

    /// Pops the scheduled attempts at the front of each lane that are no
    /// longer current, so that `next(now:)` is.
    mutating func dropOutdatedDeadlines() {
        while let first = ready.first, !isCurrent(first) { ready.popFirst() }
        while let first = bulkReady.first, !isCurrent(first) { bulkReady.popFirst() }
    }

    /// The earliest receivedAt (ms since 1970) among the pending keys.
    mutating func oldestReceivedAt() -> Int64? {
        let entries = self.entries
        return arrivals.oldest(queued: entries.count) { entries[$0]?.receivedAt }
    }
}

extension PendingItems.Superseded {
    /// A drop in new/ superseded `by` a newer version (nil: by one already there).
    init(_ drop: Drop, by newer: ItemVersion?) {
        self.init(location: .inbox(drop.name), key: drop.item.key, version: drop.item.version,
                  kind: drop.item.kind, by: newer)
    }
}
