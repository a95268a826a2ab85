// OperatorCommands: the operator's `release`, `retry` and `replay` from
// ctl/, executed on the pending items and the spool. Every target is
// validated (ControlRequest.isValid) before anything moves. `requeue-rejected`
// is intake's (RejectedRequeue) and never comes here; so is a replay's
// selection in done/ (intake lists it, off the engine's thread, and checks
// that root asked). The engine dispatches afterwards; after a retry during
// an outage it also probes at once.
// Reports: one operator-action entry per key named (ItemEvents); `--all`
// is reported by the CLI's answer, not per key.

struct OperatorCommands {
    let spool: Spool
    let events: ItemEvents

    /// Executes `request`: a released key is pending again and due at
    /// `now` (`wall`: its new receivedAt); a retried key is due at `now`.
    func perform(_ request: ControlRequest, on pending: inout PendingItems, now: Duration,
                 wall: Int64) -> ControlResult {
        var result = ControlResult()
        for target in request.targets where !ControlRequest.isValid(target, for: request.command) {
            result.skipped.append((target, ControlRequest.invalidTargetReason))
        }
        let targets = request.targets.filter { ControlRequest.isValid($0, for: request.command) }
        switch request.command {
        case .release:
            let keys = request.all ? pending.held.sorted() : targets.compactMap { ItemKey($0) }
            for key in keys { release(key, on: &pending, now: now, wall: wall, into: &result) }
        case .retry:
            let keys = request.all ? pending.entries.keys.sorted() : targets.compactMap { ItemKey($0) }
            for key in keys { retry(key, on: &pending, now: now, reportEach: !request.all, into: &result) }
        case .requeueRejected, .replay:
            // rejected/ is intake's: it executes these itself (RejectedRequeue),
            // and hands a replay over as the snapshots it selected (`replay`).
            preconditionFailure("\(request.command.rawValue) is not executed from a request here")
        }
        return result
    }

    /// Why a replay queues no more while `limit` items are pending.
    static func beyondHighWater(_ limit: Int) -> String {
        "the queue holds \(limit) items, its high-water mark: replay the rest once it has drained"
    }

    /// Queues delivered snapshots again, each due at `now`: the copy intake
    /// staged in queue/ (`Spool.stageReplay`) takes the key's name there, so
    /// it goes out with its own Idempotency-Key (`wall` is recorded as its
    /// replayedAt, for a stream). A key that is pending or
    /// held is left alone (what it has is newer, or waits for a person),
    /// and none is queued beyond `limit` pending keys (the engine's
    /// high-water mark): the rest are skipped with a reason and their
    /// copies removed. A key in flight is answered as replayed and decided
    /// when its attempt has ended (`replayAwaitingAttempt`): the attempt
    /// writes done/ before the engine learns how it ended, so the copy may
    /// be of the very snapshot it has just delivered, which a replay asked
    /// for after seeing it in done/ must send again. `queued`: the keys
    /// queued now.
    func replay(_ snapshots: [DeliveredSnapshot], on pending: inout PendingItems, now: Duration,
                wall: Int64, limit: Int) -> (result: ControlResult, queued: Int) {
        var result = ControlResult()
        var queued = 0
        for snapshot in snapshots {
            let key = snapshot.key
            if pending.entries[key]?.inFlight == true {
                pending.replaysAwaitingAttempt[key] = snapshot
                result.applied.append(key.rawValue)
                continue
            }
            let fate = spool.fate(ofStaged: snapshot)
            let refusal: String? = if pending.entries[key] != nil {
                "queued: its pending snapshot is delivered anyway"
            } else if pending.held.contains(key) {
                "held: use release"
            } else if fate == .replaced {
                "delivered again while the replay was copied from done/: the destination has its newest snapshot"
            } else if fate == .gone {
                "removed from done/ (DoneRetention=) while the replay was copied"
            } else if pending.count >= limit {
                Self.beyondHighWater(limit)
            } else {
                nil
            }
            if let refusal {
                spool.discardReplay(key)
                result.skipped.append((key.rawValue, refusal))
                // What goes out anyway, or went out since: nothing to do.
                if pending.entries[key] != nil || fate == .replaced { result.nothingToDoHere.insert(key.rawValue) }
            } else {
                do {
                    try spool.commitReplay(key)
                    // Recorded beside the copy, so that a restart before it
                    // goes out still sends it as a replay (a stream's message
                    // id); not fsynced, like every failure record.
                    let state = DeliveryState(replayedAt: wall)
                    var entry = PendingItems.Entry(state: state, deadline: now, receivedAt: snapshot.receivedAt)
                    entry.hasStateFile = (try? spool.writeState(state, for: key)) != nil
                    pending.add(key, entry)
                    events.operatorAction(.replayed, key: key)
                    result.applied.append(key.rawValue)
                    queued += 1
                } catch {
                    result.skipped.append((key.rawValue, "\(error)"))
                }
            }
        }
        return (result, queued)
    }

    /// Decides the replay that waited for `key`'s attempt, which has ended
    /// and whose fate is performed, as `replay` decides any: queued if the
    /// copy is of what done/ now holds, skipped (and logged, as the
    /// operator was answered before) if a snapshot is pending again, or
    /// done/ has a newer one. Returns whether one was queued.
    func replayAwaitingAttempt(of key: ItemKey, on pending: inout PendingItems, now: Duration, wall: Int64,
                               limit: Int) -> Bool {
        guard let snapshot = pending.replaysAwaitingAttempt.removeValue(forKey: key) else { return false }
        let (result, queued) = replay([snapshot], on: &pending, now: now, wall: wall, limit: limit)
        for (_, reason) in result.skipped {
            events.sink.write(LogEntry(.notice, "\(key): the replay asked for while it was being delivered is not "
                                       + "queued: \(reason)"))
        }
        return queued > 0
    }

    /// `key` skipped because there is nothing to do for it here.
    private func absent(_ key: ItemKey, _ reason: String, into result: inout ControlResult) {
        result.skipped.append((key.rawValue, reason))
        result.nothingToDoHere.insert(key.rawValue)
    }

    private func release(_ key: ItemKey, on pending: inout PendingItems, now: Duration, wall: Int64,
                         into result: inout ControlResult) {
        // A key both held and queued (a held file that no longer verified
        // let a newer snapshot in): releasing would put the held one over
        // the queued one.
        guard pending.entries[key] == nil else {
            guard pending.held.contains(key) else { return absent(key, "not held", into: &result) }
            result.skipped.append((key.rawValue,
                                   "another snapshot of it is queued; the held one stays in hold/ (`txrecon show` it)"))
            return
        }
        do {
            guard pending.held.contains(key) else { return absent(key, "not held", into: &result) }
            guard try spool.release(key) else {
                // Its file was taken out of hold/ by hand: nothing is held.
                pending.held.remove(key)
                return absent(key, "not held: its file is no longer in hold/", into: &result)
            }
            pending.held.remove(key)
            pending.add(key, PendingItems.Entry(state: DeliveryState(), deadline: now, receivedAt: wall))
            events.operatorAction(.released, key: key)
            result.applied.append(key.rawValue)
        } catch {
            result.skipped.append((key.rawValue, "\(error)"))
        }
    }

    private func retry(_ key: ItemKey, on pending: inout PendingItems, now: Duration, reportEach: Bool,
                       into result: inout ControlResult) {
        guard var entry = pending.entries[key] else {
            if pending.held.contains(key) {
                result.skipped.append((key.rawValue, "held: use release"))
            } else {
                absent(key, "not queued", into: &result)
            }
            return
        }
        if entry.inFlight {
            result.skipped.append((key.rawValue, "being delivered right now"))
            return
        }
        entry.deadline = now
        entry.state.nextAttemptAt = nil
        entry.state.delayMilliseconds = nil
        pending.entries[key] = entry
        pending.schedule(key, at: now)
        // Only a recorded delay needs undoing on disk: without a KEY.state a
        // key is due at once after a restart anyway, and a new one would be
        // left behind at delivery.
        if entry.hasStateFile { try? spool.writeState(entry.state, for: key) }
        if reportEach { events.operatorAction(.retried, key: key) }
        result.applied.append(key.rawValue)
    }
}
