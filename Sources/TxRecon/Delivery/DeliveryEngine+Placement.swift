// DeliveryEngine's placement of drops: a drop intake hands over (or one
// parked behind its key's attempt, or a snapshot the operator replays) is
// placed by the supersede rule. PendingItems.place decides, from what is
// pending and what the spool holds under the key; the engine makes the
// spool moves it returns, in order, then applies its change.
import Glibc

extension DeliveryEngine {
    /// Places a drop by the supersede rule (PendingItems.place): makes
    /// the spool moves it returns, in order, then its change. Returns the
    /// spool's error when the drop could not be taken; it then stays in new/.
    @discardableResult
    func place(_ drop: Drop) -> SpoolError? {
        let key = drop.item.key
        defer { published.status.held = pending.held.count }
        do {
            let placement = try pending.place(drop, freshKeyWaitsInInbox: freshKeysWaitInInbox) {
                location throws(SpoolError) in
                // done/ is read only where its index cannot rule the key out.
                if location == .done, !done.mayHold(key) { return nil }
                return try storedVersion(location, key, against: drop.item.version)
            }
            // The earlier delivery's failure record goes beside it before the
            // new snapshot can be queued, fail, or be delivered in its turn.
            if case .fresh = placement.change, !done.untidied.isEmpty, done.untidied.take(key) { tidy(key) }
            for move in placement.moves { try make(move, placing: drop) }
            pending.apply(placement.change, now: clock.now)
            return nil
        } catch where spool.isGoneFromInbox(drop.name, after: error) {
            // Read twice (the second time by a scan) and taken meanwhile.
            return nil
        } catch {
            return error
        }
    }

    fileprivate func make(_ move: PendingItems.SpoolMove, placing drop: Drop) throws(SpoolError) {
        switch move {
        case let .supersede(old):
            switch old.location {
            case let .inbox(name): try spool.supersede(drop: name, key: old.key, version: old.version)
            case .queue: try spool.supersede(.queue, key: old.key, version: old.version)
            case .hold:
                try spool.supersede(.hold, key: old.key, version: old.version)
                pending.held.remove(old.key)
            }
            published.status.superseded += 1
            events.superseded(old.key, kind: old.kind, version: old.version, by: old.by, file: old.inboxName,
                              app: settings.apps.name(of: drop.item))
        case let .accept(name, key):
            try spool.accept(drop: name, as: key)
            events.accepted(drop.item, file: name, app: settings.apps.name(of: drop.item))
        }
    }

    /// Places a drop that waited for its key's attempt to end. Intake is
    /// not waiting for an answer, so a failure is logged here and intake is
    /// asked to read new/ again.
    func placeParked(_ drop: Drop) {
        guard let error = place(drop) else { return }
        log.write(LogEntry(.error, "new/\(LogText.escaped(drop.name)) (\(drop.item.key)) not taken: \(error); "
                           + "it stays in new/ and intake reads it again"))
        intake.readInboxAgain()
    }

    /// The version of the snapshot stored for `key` in `location`, to
    /// compare with a drop of version `incoming`; nil when there is none.
    /// A file that no longer decodes or verifies has the lowest version, so
    /// any new snapshot is newer (delivering too much is safe, too little is
    /// not) and replaces it. What stands at the key's name and cannot be
    /// read for good (a directory, say) holds no snapshot: the drop is
    /// placed as if the name were free, and a move onto it sets the item
    /// aside. StoredItemReader.version decides what is checked.
    fileprivate func storedVersion(_ location: SpoolLocation, _ key: ItemKey,
                               against incoming: ItemVersion) throws(SpoolError) -> ItemVersion? {
        let bytes: [UInt8]?
        do {
            bytes = try spool.read(location, key, maximumSize: settings.maxFileSize)
        } catch where error.isPermanent || error.code == EFBIG {
            // EFBIG: larger than a MaxFileSize= lowered since; it will not
            // be read again either.
            return nil
        }
        guard let bytes else { return nil }
        return configured.context.storedItems.version(bytes, key: key, against: incoming)
    }
}
