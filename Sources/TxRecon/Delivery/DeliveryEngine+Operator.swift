// DeliveryEngine's operator half: the requests of ctl/ (retry, release,
// forget…; OperatorCommands decides and makes the spool moves) and the
// delivered snapshots `txrecon replay` queues again, each followed by a
// look at what is due and a published status.

extension DeliveryEngine {
    /// Executes one request from ctl/ (OperatorCommands).
    func perform(_ request: ControlRequest) -> ControlResult {
        let result = OperatorCommands(spool: spool, events: events)
            .perform(request, on: &pending, now: clock.now, wall: clock.wallMilliseconds)
        // A failing backend is only probed: the retry is the next probe, at once.
        if request.command == .retry, !result.applied.isEmpty { pacing.health.probeNow(clock.now) }
        dispatchDue()
        publishStatus()
        return result
    }

    /// Queues delivered snapshots again for `txrecon replay`
    /// (OperatorCommands.replay); intake selected them in done/. `full`:
    /// why no more can be queued now (the high-water mark), so that the
    /// rest of a replay is answered without being copied.
    func replay(_ snapshots: [DeliveredSnapshot]) -> (result: ControlResult, full: String?) {
        // A key's earlier failure record goes beside its delivered snapshot
        // before the copy is queued, as for a new snapshot (`place`).
        for snapshot in snapshots where !done.untidied.isEmpty && done.untidied.take(snapshot.key) { tidy(snapshot.key) }
        let (result, queued) = OperatorCommands(spool: spool, events: events)
            .replay(snapshots, on: &pending, now: clock.now, wall: clock.wallMilliseconds, limit: settings.highWater)
        published.status.statistics.replayed += queued
        dispatchDue()
        publishStatus()
        let limit = settings.highWater
        return (result, pending.count >= limit ? OperatorCommands.beyondHighWater(limit) : nil)
    }

    /// Decides a replay asked for while `key` was in flight, now that its
    /// attempt has ended (OperatorCommands.replayAwaitingAttempt); the
    /// attempt's end dispatches what is due afterwards.
    func replayAwaitingAttempt(of key: ItemKey) {
        guard pending.replaysAwaitingAttempt[key] != nil else { return }
        if OperatorCommands(spool: spool, events: events)
            .replayAwaitingAttempt(of: key, on: &pending, now: clock.now, wall: clock.wallMilliseconds,
                                   limit: settings.highWater) {
            published.status.statistics.replayed += 1
        }
    }
}
