// DeliveryEngine's intake half: what intake sends and asks. Intake's senders
// post batches of decoded drops (IntakeHandOff: placed here by the
// supersede rule; the load is sent back as credit, and waiting senders are
// woken when there is room again, see IntakeBackPressure), ask which
// versions are pending for a receipt's split, and report the counts of
// their own moves for the status. The engine's side of the link is IntakeLink.

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

    /// Places decoded drops from new/ by the supersede rule, at once, and
    /// tells intake's senders the load: what tests hand over directly.
    /// `full`: `highWater` keys are pending now.
    @discardableResult
    func offer(_ drops: [Drop]) -> Offered {
        let offered = placeBatch(drops)
        publishLoad(wakes: false)
        return offered
    }

    /// A batch `sender` posted (IntakeHandOff.offer): placed, its refusals
    /// and the load afterwards sent back, and the other senders told the load.
    func take(_ drops: [Drop], from sender: IntakeHandOff) {
        let offered = placeBatch(drops)
        sender.took(drops.count, refused: offered.refused, load: load, limits: settings.limits)
        for other in intake.senders where other !== sender { other.publish(load, settings.limits, wakes: false) }
    }

    private func placeBatch(_ drops: [Drop]) -> Offered {
        var offered = Offered()
        for drop in drops where isRunning || isStarting {
            if let error = place(drop) { offered.refused.append((drop.name, error)) }
        }
        dispatchDue()
        publishStatus()
        offered.full = IntakeBackPressure.isFull(load, settings.limits)
        return offered
    }

    /// A sender intake made (IntakeHandOff.init): it is told the load from
    /// now on, and woken when there is room again.
    func register(_ sender: IntakeHandOff) {
        guard isRunning || isStarting else { return sender.engineStopped() }
        intake.senders.append(sender)
        sender.publish(load, settings.limits, wakes: true)
    }

    /// Times the waits of a sender's offer `number`: `inboxWindowWait` from
    /// now on this engine's clock, the sender's previous timer cancelled.
    func timeIntakeWait(of sender: IntakeHandOff, offer number: Int) {
        let id = ObjectIdentifier(sender)
        intake.waitTimers[id]?.cancel()
        intake.waitTimers[id] = after(clock.now + settings.inboxWindowWait) { engine in
            engine.intake.waitTimers[id] = nil
            sender.giveUp(offer: number)
        }
    }

    /// Ends the timer of a sender's offer, whose waits are over. The
    /// sender posts this before its next offer can arm another, and this
    /// thread runs posts in order: the timer there is that offer's.
    func endIntakeWait(of sender: IntakeHandOff) {
        intake.waitTimers.removeValue(forKey: ObjectIdentifier(sender))?.cancel()
    }

    /// A sender found the engine still full when its wait ran out: intake
    /// takes no more drops until fewer than `lowWater` are pending, which
    /// STATUS says; if they already are (attempts ended since the engine
    /// last told the sender), intake reads new/ again now.
    func intakeStoppedTaking() {
        guard isRunning else { return }
        if pending.entries.count < settings.lowWater {
            intake.readInboxAgain()
        } else {
            published.status.intakeWaitsBelow = settings.lowWater
        }
        publishStatus()
    }

    /// What intake's back-pressure is decided on.
    var load: IntakeBackPressure.Load {
        IntakeBackPressure.Load(pending: pending.entries.count, inbox: pending.inboxCount, backendFailing: pacing.health.isFailing)
    }

    var freshKeysWaitInInbox: Bool { IntakeBackPressure.freshKeyWaitsInInbox(load, settings.limits) }

    /// Tells each sender the load now, and wakes those waiting when `wakes`.
    func publishLoad(wakes: Bool) {
        guard !intake.senders.isEmpty else { return }
        let load = self.load, limits = settings.limits
        for sender in intake.senders { sender.publish(load, limits, wakes: wakes) }
    }

    /// Ends every sender's wait for good and lets them go: the engine
    /// stops (a sender made later is told so when it registers).
    func releaseSenders() {
        for sender in intake.senders { sender.engineStopped() }
        intake.senders.removeAll()
        for timer in intake.waitTimers.values { timer.cancel() }
        intake.waitTimers.removeAll()
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

    /// Counts files intake has moved to rejected/ (the outcome's counter;
    /// how many are there is `noteRejectedCount`'s).
    func noteRejected(count: Int) {
        published.status.statistics.rejected += count
        publishStatus()
    }

    /// Intake listed rejected/: `count` items are there (RejectedCount).
    func noteRejectedCount(_ count: Int) {
        published.status.rejected = count
        publishStatus()
    }

    /// Intake took a verified notification carrying `novelties`.
    func noteNovelties(_ novelties: [AppleNovelty]) {
        for novelty in novelties { published.status.statistics.novelties[novelty, default: 0] += 1 }
        publishStatus()
    }

    /// Records whether intake is paused (and why), for STATUS.
    func noteIntakePaused(_ reason: String?) {
        published.status.intakePausedBecause = reason
        publishStatus()
    }
}
