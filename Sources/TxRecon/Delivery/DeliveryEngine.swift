// DeliveryEngine: the one place that decides what happens next to an item.
//
// It keeps, per key, the one pending snapshot and its delivery state
// (PendingItems); starts attempts for due keys up to MaxConcurrentDeliveries
// (never two for one key); performs what AttemptVerdict makes of each ended
// attempt, whose commit in the spool (queue/ -> done/ | queue/ later |
// hold/) the attempt made where its answer arrived; and makes the spool
// moves the supersede rule (PendingItems.place) returns for every new drop.
// The spool on disk is the truth: `start()` rebuilds all of this from
// queue/ and hold/.
//
// A fresh key (none pending, none held) is not moved into queue/ while the
// backend answers: its first attempt sends intake's verified item and moves
// new/NAME straight to done/, hold/, or (when it failed) queue/, one rename
// where two were made before. At most `Settings.inboxWindow` keys wait in
// new/ like this; intake waits briefly for room before further drops go to
// queue/. A crash leaves such a file in new/, read again at start.
//
// What it keeps besides is in owned values, each in a file of its own:
// whether and when the next attempt may start (StartPacing), what it knows
// of done/ (DoneUpkeep), its status and when that is handed on
// (StatusPublication), what it writes down (DeliveryReports), its link with
// intake (IntakeLink), and what the configuration made of it (Configured).
// The engine is one type in several files, one concern each, as Postfix's
// queue manager is one program in several: this one (lifecycle, starting
// attempts, performing their verdicts, the status), the placement of drops
// (+Placement), the upkeep of done/ (+Done), the backend's health
// (+Backend), and what its callers call: intake (+Intake) and the operator
// (+Operator).
//
// Time comes from an injected EngineClock: a timer is armed only while some
// key waits for its next attempt, so an idle engine never wakes up.
// Spool work here is a handful of short local syscalls per item (rename,
// small reads); the network is the Transport's, never waited for here
// (docs/threads.md). Reports: one log entry per item event, the status on
// change.
import Glibc

package actor DeliveryEngine {
    /// Builds the HTTP request of one attempt: (item, attempt number,
    /// receivedAt ms, now ms) -> request. Pure; runs off the actor.
    package typealias RequestPreparer = @Sendable (Item, Int, Int64, Int64) -> DeliveryRequest

    private enum Phase {
        case starting
        case running
        /// `stop()` lets the attempts in flight end; `waiter` is its wait
        /// for the last one, once it waits. Boxed: held in the enum itself,
        /// the continuation (a generic struct) made every look at the phase
        /// (several per attempt) go through its metadata and value witnesses.
        case draining(waiter: Boxed<CheckedContinuation<Void, Never>>?)
        case stopped
    }

    /// The engine's own thread (a ThreadExecutor): actor jobs run there,
    /// never on the cooperative pool. The engine's tasks (attempts, timers)
    /// prefer it as their task executor too: a task without a preference
    /// resumes on the global executor after a continuation, which on Linux
    /// starts libdispatch's never-ending one-second monitor.
    nonisolated let executor: ThreadExecutor
    package nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    // The state below is internal (not private) only where the engine's
    // extensions in other files use it (placement, done/, the backend's
    // health, intake's and the operator's halves); it is isolated to the
    // engine all the same, so nothing outside reaches it without a hop
    // onto its thread.

    /// The spool and the clock of the attempts' context, kept here too:
    /// read several times per item, a stored `let` costs no reference
    /// counting through the context.
    let spool: Spool
    let clock: any EngineClock
    private(set) var configured: Configured
    var settings: Settings { configured.settings }
    private var destination: String { configured.context.destination }
    var reports: DeliveryReports
    var events: ItemEvents { reports.events }
    var log: any LogSink { reports.log }
    private var phase = Phase.starting
    var isRunning: Bool { if case .running = phase { true } else { false } }
    var isStarting: Bool { if case .starting = phase { true } else { false } }
    var pending = PendingItems()
    var done: DoneUpkeep
    var published: StatusPublication
    var pacing: StartPacing
    var intake = IntakeLink()

    /// `receipts`: receipts/, which the parts of receipt uploads name (the
    /// daemon shares one between intake and every engine); by default the
    /// spool's own.
    package init(spool: Spool, settings: Settings, transport: any Transport, prepare: @escaping RequestPreparer,
         clock: any EngineClock, log: any LogSink, executor: ThreadExecutor,
         buildDoneIndex: @escaping DoneIndexBuilder = DoneIndex.build(from:), redactor: SecretRedactor = SecretRedactor(),
         destination: String = Destination.primaryName, ledger: (any ConfirmationRecorder)? = nil,
         receipts: ReceiptLibrary? = nil, answers: AnswerTaker? = nil,
         publish: @escaping @Sendable (EngineStatus) -> Void) {
        self.executor = executor
        self.spool = spool
        self.clock = clock
        self.reports = DeliveryReports(log: log, ledger: ledger)
        self.done = DoneUpkeep(build: buildDoneIndex)
        self.published = StatusPublication(interval: settings.statusInterval, publish: publish)
        published.status.apps = settings.apps.allNames
        self.pacing = StartPacing(maxRate: settings.maxRate)
        let receipts = receipts ?? ReceiptLibrary(store: ReceiptStore(layout: spool.layout))
        let context = Attempt.Context(spool: spool, storedItems: StoredItemReader(settings, receipts: receipts),
                                      prepare: prepare, redactor: redactor, clock: clock,
                                      destination: destination, answers: answers)
        self.configured = Configured(settings: settings, transport: transport, context: context)
    }

    // MARK: Lifecycle

    /// Rebuilds the engine from queue/ and hold/ (the durable truth) and
    /// starts delivering. Persisted next-attempt times are honoured, so a
    /// restart neither forgets nor resets the backoff; a time further away
    /// than the delay planned for it (or, for states that do not record it,
    /// than the schedule allows), as after the wall clock jumped back, is
    /// pulled in.
    package func start() throws(SpoolError) {
        guard case .starting = phase else { preconditionFailure("DeliveryEngine.start() called twice") }
        let restored = try spool.restoreQueue()
        for note in restored.notes { log.write(note) }
        pending.restore(restored.items, now: clock.now, wall: clock.wallMilliseconds,
                        longestDelay: settings.schedule.longestDelay)
        pending.held = Set(try spool.restoreHold())
        published.status.rejected = try spool.restoreRejected()
        rebuildDoneIndex()
        phase = .running
        published.status.phase = "running"
        dispatchDue()
        publishStatus()
    }

    /// Stops starting attempts, lets those in flight end within
    /// `stopGrace`, and returns. Nothing undelivered is finished: an attempt
    /// still running when the grace ends leaves its item in queue/.
    func stop() async {
        guard isRunning || isStarting else { return }
        phase = .draining(waiter: nil)
        published.status.phase = "stopping"
        cancelTimer()
        releaseSenders()
        publishStatus()
        if pacing.active > 0 {
            let grace = after(clock.now + settings.stopGrace) { $0.endDrain() }
            // The task can be queued again before the closure runs: when
            // the caller's task prefers another executor than the engine's
            // thread (as the daemon's does), the runtime re-queues it at
            // this await. The last attempt can end meanwhile, and its
            // `endDrain` then found no waiter.
            await withCheckedContinuation { continuation in
                if pacing.active == 0 { continuation.resume() } else { phase = .draining(waiter: Boxed(continuation)) }
            }
            grace.cancel()
        }
        phase = .stopped
        published.endFlush()
        // Left for the next start, they would be orphans it removes, and
        // the delivered items would lose their failure records.
        for key in done.untidied.all() { tidy(key) }
    }

    private func endDrain() {
        guard case let .draining(waiter?) = phase else { return }
        waiter.value.resume()
        phase = .draining(waiter: nil)
    }

    /// Applies a reloaded configuration. Attempts in flight finish on the
    /// transport they started with. `updateTransport` gives the transport
    /// its new options (URL, TLS) here, on the engine's thread, with the new
    /// `prepare` (token, signature): an attempt launched between the two
    /// would carry the old credentials to the new URL.
    func reconfigure(settings: Settings, transport: any Transport, prepare: @escaping RequestPreparer,
                     updateTransport: () -> Void = {}) {
        updateTransport()
        pacing.setMaxRate(settings.maxRate, was: self.settings.maxRate)
        published.setInterval(settings.statusInterval)
        published.status.apps = settings.apps.allNames
        let old = configured.context, stored = old.storedItems
        let context = Attempt.Context(spool: spool, storedItems: StoredItemReader(settings, verifiers: stored.verifiers,
                                                                                receipts: stored.receipts),
                                      prepare: prepare, redactor: old.redactor, clock: clock,
                                      destination: old.destination, answers: old.answers)
        configured = Configured(settings: settings, transport: transport, context: context)
        // What waits was verified by intake under the old configuration.
        pending.forgetVerifiedItems()
        dispatchDue()
        publishLoad(wakes: true)
    }

    /// Wedges the engine on purpose, for the real-systemd test that the
    /// watchdog restarts a stuck daemon (enabled only by
    /// TXRECON_TEST_FREEZE=1). It blocks the actor's thread for good, which
    /// is exactly the failure the watchdog exists for.
    func freezeForTesting() {
        while true { Glibc.sleep(3600) }
    }

    var currentStatus: EngineStatus { published.status }

    // MARK: Scheduling

    /// Attempts handed to the transport at once: twice its connections, so
    /// a connection that finishes finds the next attempt waiting instead of
    /// idling until this actor has settled the last one. The transport still sends at
    /// most MaxConcurrentDeliveries at a time, and one key never has two.
    private var outstandingLimit: Int { settings.maxConcurrentDeliveries * 2 }

    /// Starts attempts for due keys while there is capacity, then arms the
    /// timer for the next start (or disarms it when nothing waits).
    func dispatchDue() {
        guard isRunning else { return }
        let now = clock.now
        while pacing.active < outstandingLimit, let start = nextStart(now: now), start <= now,
              let first = pending.popNext(now: now) {
            // One lookup: the entry is changed where it is stored.
            guard let index = pending.entries.position(of: first.key),
                  !pending.entries[position: index].inFlight,
                  pending.entries[position: index].deadline == first.deadline else { continue }
            pacing.started(first.key, now: now)
            let entry = pending.entries[position: index]
            let cached = entry.cachedItem
            pending.entries[position: index].inFlight = true
            if entry.inbox == nil { pending.entries[position: index].forgetItem() }
            // An earlier delivery of the key may have left its failure
            // record in done/; the index says when it cannot have.
            let follows = done.mayHold(first.key)
            let state = entry.state
            launch(first.key, attempt: state.attempts + 1, receivedAt: entry.receivedAt, cached: cached,
                   hasStateFile: entry.hasStateFile, followsDelivery: follows, inbox: entry.inbox,
                   replayedAt: state.replayedAt)
        }
        armTimer()
        tidyWhenIdle()
    }

    /// When the next attempt may start, for the key PendingItems puts
    /// next (a due bulk attempt only when nothing else is due), as
    /// StartPacing allows it; nil when none waits or may start. `now`: the
    /// caller's reading of the clock (see StartPacing.start).
    func nextStart(now: Duration) -> Duration? {
        pending.dropOutdatedDeadlines()
        guard let first = pending.next(now: now) else { return nil }
        return pacing.start(due: first.deadline, now: now)
    }

    private func armTimer() {
        guard isRunning, pacing.active < outstandingLimit, let next = nextStart(now: clock.now) else { return cancelTimer() }
        if let timer = pacing.timer, timer.deadline <= next { return }
        pacing.timer?.timer.cancel()
        pacing.timer = (after(next) { $0.timerFired(next) }, next)
    }

    /// Runs `action` on the engine at `deadline`, unless cancelled first: a
    /// timer of the engine's thread (EngineClock.schedule), no task per wait.
    func after(_ deadline: Duration, _ action: @escaping @Sendable (isolated DeliveryEngine) -> Void)
        -> EngineTimer {
        clock.schedule(at: deadline, on: executor) { self.assumeIsolated { action($0) } }
    }

    private func timerFired(_ deadline: Duration) {
        guard pacing.timer?.deadline == deadline else { return }
        pacing.timer = nil
        dispatchDue()
    }

    private func cancelTimer() {
        pacing.timer?.timer.cancel()
        pacing.timer = nil
    }

    // MARK: Attempts

    /// Runs one attempt as the transport's exchange (see Attempt: read,
    /// send, commit the outcome where the answer arrives; the key is in
    /// flight, so nothing else touches its file, and no blocking call runs
    /// on the cooperative pool). Then hands the result to the
    /// engine's thread as a plain call: an attempt costs no task, no
    /// continuation and no actor hop, which at thousands of attempts a
    /// second is a tenth of the daemon's CPU (bench/FINDINGS.md).
    private func launch(_ key: ItemKey, attempt number: Int, receivedAt: Int64, cached: Item?, hasStateFile: Bool,
                        followsDelivery: Bool, inbox: String?, replayedAt: Int64?) {
        let attempt = Attempt(key: key, number: number, receivedAt: receivedAt, cached: cached,
                              hasStateFile: hasStateFile, followsDelivery: followsDelivery, inbox: inbox,
                              maximumSize: settings.maxFileSize, now: clock.wallMilliseconds, replayedAt: replayedAt)
        let context = configured.context
        let executor = self.executor, started = clock.now
        configured.transport.start(attempt.exchange(in: context) { exchange in
            executor.submit {
                self.assumeIsolated { engine in engine.attemptEnded(key, exchange, attempt: number, started: started) }
            }
        })
    }

    /// Performs what AttemptVerdict makes of an ended attempt: the key's
    /// fate in memory, its events, the backend's health. `started`: the
    /// engine clock's `now` when the attempt was launched.
    private func attemptEnded(_ key: ItemKey, _ exchange: Attempt.Exchange, attempt: Int, started: Duration) {
        pacing.active -= 1
        // Nothing was sent by a local end: the next probe goes with the next key.
        let wasProbe = pacing.health.probeEnded(key)
        // What was sent, if anything: the item and what the worker settled.
        var answered: (item: Item, settlement: Attempt.Settlement)?
        if case let .answered(item, settlement) = exchange {
            answered = (item, settlement)
            published.status.statistics.attemptDurations.record(clock.now - started)
        }
        let item = answered?.item
        // One look-up: nothing changes the entries before the fate is
        // performed, so `index` holds until then.
        guard let index = pending.entries.position(of: key) else { return afterAttempt(of: key) }
        var entry = pending.entries[position: index]
        entry.inFlight = false
        let verdict: AttemptVerdict
        switch exchange {
        case let .local(end):
            verdict = .local(key, end)
        case let .answered(item, settlement):
            entry.version = item.version
            entry.kind = item.kind
            verdict = .answered(key, settlement, attempt: attempt, inbox: entry.inbox,
                                metOutage: pacing.health.metOutage(sentAt: settlement.sentAt))
        }
        if let note = verdict.note { log.write(note) }
        let inbox = entry.inbox
        if verdict.leftInbox {
            entry.forgetItem()
            pending.inboxCount -= 1
        }
        if verdict.acceptedFromInbox, let item, let inbox {
            events.accepted(item, file: inbox, app: settings.apps.name(of: item))
        }
        switch verdict.fate {
        case let .delivered(confirmation):
            pending.entries.remove(at: index)
            if entry.hasStateFile { done.untidied.add(key) }
            published.status.delivered += 1
            if done.delivered(key) { rebuildDoneIndex() }
            let app = item.flatMap { settings.apps.name(of: $0) }
            if let app { published.status.statistics.deliveredByApp[app, default: 0] += 1 }
            reports.delivered(key, item: item, attempt: attempt, confirmation: confirmation, destination: destination,
                              at: clock.wallMilliseconds, inbox: inbox, app: app)
            if let notes = answered?.settlement.outboxNotes, !notes.isEmpty {
                published.status.statistics.answersQueued += events.outbox(key, notes, app: app)
            }
            if let parked = entry.parked?.value { placeParked(parked) }
        case let .refused(reason, httpStatus):
            pending.entries.remove(at: index)
            pending.held.insert(key)
            published.status.statistics.held += 1
            if let item {
                events.held(key, kind: item.kind, version: item.version, attempt: attempt, reason: reason,
                            status: httpStatus, app: settings.apps.name(of: item))
                watchDeadline(item, held: true)
            }
            if let parked = entry.parked?.value { placeParked(parked) }
        case .heldUndecodable:
            pending.held.insert(key)
            published.status.statistics.held += 1
            if let parked = pending.forget(key) { placeParked(parked) }
        case let .retry(retry):
            let parked = retry.placesParked ? entry.parked?.value : nil
            if parked != nil { entry.parked = nil }
            pending.entries[position: index] = entry
            scheduleRetry(key, reason: retry.reason, status: retry.status, retryAfter: retry.retryAfter,
                          countsAgainstBackend: retry.countsAgainstBackend, atOnce: retry.atOnce, wasProbe: wasProbe,
                          app: item.flatMap { settings.apps.name(of: $0) })
            if retry.watchesDeadline, let item { watchDeadline(item, held: false) }
            if let parked { placeParked(parked) }
        case let .setAside(because):
            setAside(key, entry, item: item, because: because)
        case .forgotten:
            if let parked = pending.forget(key) { placeParked(parked) }
        }
        if verdict.backendAnswered, let sentAt = answered?.settlement.sentAt { backendAnswered(requestSent: sentAt) }
        afterAttempt(of: key)
    }

    /// Warns, once per request, when a CONSUMPTION_REQUEST this
    /// destination answers for is still unconfirmed (ConsumptionDeadlines).
    private func watchDeadline(_ item: Item, held: Bool) {
        let after = configured.context.answers?.deadlineWarning(for: item, from: destination)
        guard reports.watchDeadline(item, held: held, after: after, destination: destination,
                                    now: clock.wallMilliseconds) else { return }
        published.status.statistics.consumptionDeadlineWarnings += 1
    }

    /// An item whose spool move failed for a reason that will not go away
    /// by itself goes to rejected/ with `detail` as its reason
    /// (`Spool.setAside`) instead of being tried, and delivered, again and
    /// again. If even that fails it is tried again on schedule.
    private func setAside(_ key: ItemKey, _ entry: PendingItems.Entry, item: Item?, because detail: String) {
        let rejection = Rejection("unfinishable", detail + "; set aside so that it is not tried again and again. "
                                  + "Nothing is lost: fix the cause, then requeue it to deliver it again")
        do {
            let name = try spool.setAside(key, inbox: entry.inbox, because: rejection, at: clock.wallMilliseconds)
            let parked = entry.parked?.value
            pending.forget(key)
            // The count of rejected/ follows from intake's listing (RejectedCount).
            published.status.statistics.rejected += 1
            events.setAside(key, kind: item?.kind ?? entry.kind, version: item?.version ?? entry.version,
                            reason: detail, movedTo: name, app: item.flatMap { settings.apps.name(of: $0) })
            if let parked { placeParked(parked) }
        } catch {
            log.write(LogEntry(.error, "\(key): \(detail); setting it aside in rejected/ failed too (\(error)); "
                               + "it is tried again on schedule"))
            pending.entries[key] = entry
            scheduleRetry(key, reason: "spool: \(detail)", status: nil, retryAfter: nil, countsAgainstBackend: false,
                          app: item.flatMap { settings.apps.name(of: $0) })
        }
    }

    /// Keeps the item and arms its next attempt per the schedule (`atOnce`:
    /// now); persists the state so a restart keeps the backoff. `app`: the
    /// item's, when the attempt read it.
    private func scheduleRetry(_ key: ItemKey, reason: String, status httpStatus: Int?, retryAfter: Duration?,
                               countsAgainstBackend: Bool, atOnce: Bool = false, wasProbe: Bool = false,
                               app: String? = nil) {
        guard var entry = pending.entries[key] else { return }
        let wall = clock.wallMilliseconds
        let delay = atOnce ? .zero
            : settings.schedule.delay(afterFailedAttempts: entry.state.attempts + 1, retryAfter: retryAfter)
        entry.failed(reason: reason, status: httpStatus, nextAfter: delay, now: clock.now, wall: wall,
                     waitsForBackend: countsAgainstBackend)
        let next = wall + delay.milliseconds
        // A file still in new/ has no queue/KEY.state beside it.
        if entry.inbox == nil {
            entry.hasStateFile = true
            do {
                try spool.writeState(entry.state, for: key)
            } catch {
                log.write(LogEntry(.warning, "\(key): could not record the failed attempt: \(error); "
                                   + "after a restart it may be tried sooner than scheduled"))
            }
        }
        pending.entries[key] = entry
        pending.schedule(key, at: entry.deadline)
        events.deferred(key, kind: entry.kind, version: entry.version, attempt: entry.state.attempts,
                        reason: reason, status: httpStatus, nextAttemptAt: next, app: app)
        published.status.statistics.deferred += 1
        if countsAgainstBackend { backendFailed(key, reason, at: wall, retryAfter: retryAfter, wasProbe: wasProbe) }
    }

    private func afterAttempt(of key: ItemKey) {
        if !pending.replaysAwaitingAttempt.isEmpty { replayAwaitingAttempt(of: key) }
        dispatchDue()
        if let below = published.status.intakeWaitsBelow, pending.entries.count < below {
            published.status.intakeWaitsBelow = nil
            intake.readInboxAgain()
        }
        publishStatusAfterAttempt()
        publishLoad(wakes: IntakeBackPressure.hasRoomAgain(load, settings.limits))
        if case .draining = phase, pacing.active == 0 { endDrain() }
    }

    // MARK: Status

    /// Hands on the status an ended attempt changed, as StatusPublication
    /// coalesces it. Only while running: `stop()` publishes as it begins,
    /// and from then on every end is published, so the status the daemon
    /// leaves behind when the grace runs out with attempts still hanging
    /// is the last one.
    private func publishStatusAfterAttempt() {
        guard isRunning, pacing.active > 0 else { return publishStatus() }
        let now = clock.now
        guard let wait = published.changedByAttempt(at: now) else { return }
        guard wait > .zero else { return publishStatus() }
        published.armed(after(now + wait) { $0.flushStatus() })
    }

    private func flushStatus() {
        published.endFlush()
        publishStatus()
    }

    /// The daemon's `Settings.statusInterval`.
    static let busyStatusInterval: Duration = .milliseconds(100)

    func publishStatus() {
        let now = clock.now
        published.status.queued = pending.entries.count
        published.status.delivering = pacing.active
        published.status.held = pending.held.count
        var nextRetry: Int64?
        // The next probe's start (now while one is out); none when nothing waits.
        if pacing.health.isFailing, let start = pacing.health.probe != nil ? now : nextStart(now: now) {
            nextRetry = clock.wallMilliseconds + max(0, (start - now).milliseconds)
        }
        published.status.nextRetryAt = nextRetry
        published.status.oldestQueuedAt = pending.oldestReceivedAt()
        published.publish(at: now)
    }
}
