// DeliveryEngine's intake half: what intake calls. It offers decoded drops
// from new/ (placed by the supersede rule, with back-pressure: intake waits
// briefly for room, see IntakeBackPressure), asks which versions are pending
// for a receipt's split, and reports the counts of its own moves for the
// status. The engine's side of the link is IntakeLink.

extension DeliveryEngine {
    /// Sends the engine a call that runs on its thread in its turn, without
    /// waiting for it: intake's reports (the counts of its own moves, a
    /// pause, the hook to read new/ again) go this way, so that intake's
    /// thread does not wait behind the engine's work to say them. The
    /// thread runs calls and jobs in the order they were queued
    /// (ThreadExecutor), so what intake posts before an offer is done
    /// before the offer is.
    nonisolated func post(_ call: @escaping @Sendable (isolated DeliveryEngine) -> Void) {
        executor.submit { self.assumeIsolated(call) }
    }

    /// What became of the drops of one `offer`.
    struct Offered: Sendable {
        /// Drops that could not be taken (they stay in new/), with the
        /// spool's error; intake logs them and looks again later.
        var refused: [(name: String, error: SpoolError)] = []
        /// True when `highWater` keys are pending: intake must take no more
        /// drops until the engine asks it to read new/ again.
        var full = false
    }

    /// Takes decoded drops from new/, applying the supersede rule to each,
    /// once the window has room for all of them, then waits while the window
    /// or the engine is full (intake back-pressure); both waits together last
    /// at most `inboxWindowWait`, and `whenWaiting` is called before each:
    /// intake's start-up scan sends READY=1 then, so a backlog in new/ never
    /// holds READY until it is delivered. The wait is short because intake
    /// also executes the operator's ctl/ requests: when the engine is still
    /// full, the answer says so, and `onInboxNeedsRescan`'s hook is called
    /// once the pending keys have fallen below `lowWater`. A batch of bulk drops
    /// (`waitsForWindow` false: a receipt's thousands of parts) does not wait
    /// for the window: what finds no room goes to queue/ at once, so intake
    /// is not held up, and the drops behind it with it, until a slow
    /// destination has delivered the thousands before it.
    @discardableResult
    func offer(_ drops: [Drop], waitsForWindow: Bool = true, whenWaiting: @Sendable () -> Void = {}) async -> Offered {
        var offered = Offered()
        let giveUp = clock.now + settings.inboxWindowWait
        var waitTimer: EngineTimer?
        defer { waitTimer?.cancel() }
        // Room for the whole batch first: placed into a window with room for
        // part of it, the rest would go to queue/ (a rename here on the
        // engine's thread each, and a second one when delivered).
        while isRunning, waitsForWindow, windowLacksRoom(for: drops.count), clock.now < giveUp {
            await waitForRoom(since: intake.room.calls, until: giveUp, timer: &waitTimer, whenWaiting: whenWaiting)
        }
        for drop in drops where isRunning || isStarting {
            if let error = place(drop) { offered.refused.append((drop.name, error)) }
        }
        dispatchDue()
        publishStatus()
        while isRunning {
            let isFull = IntakeBackPressure.isFull(load, settings.limits)
            guard isFull || (waitsForWindow && windowLacksRoom(for: 1)) else { break }
            guard clock.now < giveUp else {
                if isFull {
                    offered.full = true
                    published.status.intakeWaitsBelow = settings.lowWater
                    publishStatus()
                }
                break
            }
            await waitForRoom(since: intake.room.calls, until: giveUp, timer: &waitTimer, whenWaiting: whenWaiting)
        }
        return offered
    }

    /// One wait of `offer` for room, ended by `resumeRoomWaiters`: after an
    /// attempt, or by `timer` at `giveUp`. `calls`: `intake.room.calls` when
    /// the caller found no room. Each `await` on the way here may re-queue the
    /// task (see `stop`), and a call to look again made meanwhile counts.
    private func waitForRoom(since calls: Int, until giveUp: Duration, timer: inout EngineTimer?,
                             whenWaiting: @Sendable () -> Void) async {
        if timer == nil {
            timer = after(giveUp) { $0.resumeRoomWaiters() }
        }
        whenWaiting()
        await withCheckedContinuation { continuation in intake.room.wait(continuation, since: calls) }
    }

    /// What intake's back-pressure is decided on.
    var load: IntakeBackPressure.Load {
        IntakeBackPressure.Load(pending: pending.entries.count, inbox: pending.inboxCount, backendFailing: pacing.health.isFailing)
    }

    var freshKeysWaitInInbox: Bool { IntakeBackPressure.freshKeyWaitsInInbox(load, settings.limits) }

    private func windowLacksRoom(for count: Int) -> Bool {
        IntakeBackPressure.windowLacksRoom(for: count, load, settings.limits)
    }

    func resumeRoomWaiters() {
        intake.room.resumeAll()
    }

    /// Sets what to call when a drop parked during an attempt could not be
    /// taken once the attempt ended; it is still in new/ and intake must
    /// read it again. Default: nothing.
    func onInboxNeedsRescan(_ hook: @escaping @Sendable () -> Void) {
        intake.readInboxAgain = hook
    }

    /// The version pending here for each of `keys` whose version is known
    /// (a snapshot parked behind an attempt counts: it is newer), for a
    /// receipt's split to skip what is on its way already. A key restored
    /// at start and not read yet, or held, has none: its part is written,
    /// and the supersede rule decides.
    func pendingVersions(of keys: [ItemKey]) -> [ItemKey: ItemVersion] {
        var versions: [ItemKey: ItemVersion] = [:]
        guard !pending.entries.isEmpty else { return versions }
        for key in keys {
            guard let entry = pending.entries[key] else { continue }
            if let version = entry.parked?.value.item.version ?? entry.version { versions[key] = version }
        }
        return versions
    }

    /// Counts files intake has moved to rejected/.
    func noteRejected(count: Int) {
        published.status.rejected += count
        published.status.statistics.rejected += count
        publishStatus()
    }

    /// Intake took a verified notification carrying `novelties`.
    func noteNovelties(_ novelties: [AppleNovelty]) {
        for novelty in novelties { published.status.statistics.novelties[novelty, default: 0] += 1 }
        publishStatus()
    }

    /// Intake moved `count` rejected files back into new/.
    func noteRequeued(count: Int) {
        published.status.rejected -= count
        publishStatus()
    }

    /// Records whether intake is paused (and why), for STATUS.
    func noteIntakePaused(_ reason: String?) {
        published.status.intakePausedBecause = reason
        publishStatus()
    }
}
