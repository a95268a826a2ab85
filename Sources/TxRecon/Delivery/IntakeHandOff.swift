// IntakeHandOff: one sending thread's link to one engine (intake's thread,
// or the receipt splitter's): it hands batches of drops over by message
// (DeliveryEngine.post) and waits, on its own thread, only for credit.
//
// The credit is the engine's load as the engine last published it here
// (IntakeBackPressure.Load: pending keys, fresh keys in the window, the
// backend's health) plus the drops this sender posted that the engine has
// not taken yet, all counted as pending fresh keys (what is superseded or
// goes to queue/ is known once taken). The rules are IntakeBackPressure's:
// before a batch, room in the window for all of it (unless bulk); after
// it, room for one more and fewer than `highWater` pending. A wait ends when
// the engine says there is room again (`hasRoomAgain`, after an attempt),
// takes a batch this sender posted, sees the backend fail, or stops; or
// when the engine's timer of the wait, `inboxWindowWait` on the engine's
// clock, gives up (so the tests' manual clock times it, as it times
// everything the engine does). Given up while the engine is full (by its
// own word: the sender first waits for the engine to take what is in
// transit, which may only replace keys already pending), the sender tells
// the engine that intake takes no more (`intakeStoppedTaking`) and the
// caller leaves the rest in new/ until the engine asks for a scan.
//
// Each sender counts only its own drops in transit: a batch of the
// splitter's bulk parts, or a replay, may take room in the window between
// intake's look and its batch's arrival. Then that batch's fresh keys
// beyond the window go to queue/ (a rename each), as when a wait gives up:
// a cost, never a loss.
//
// Nothing waits for the engine's answer to a batch: the drops it could not
// take (they stay in new/) come back here and are returned by the next
// `offer`, or by `settle`, which waits until every batch posted has been
// taken (intake calls it once per take, not per batch).
//
// The sender sleeps in a read of its eventfd(2); the engine writes it only
// while the sender says it waits, so a drain wakes nobody per attempt.
// Reports: nothing; the callers log what was refused.
import CGlibcExtras
import Glibc
import Synchronization

final class IntakeHandOff: Sendable {
    let engine: DeliveryEngine
    /// Written by the engine when it wakes this sender; read by the sender only.
    private let wakeFD: Int32
    private let state = Mutex(State())

    private struct State {
        /// The engine's load and limits as last published; nil limits
        /// until the engine has (a sender then waits for its first word).
        var load = IntakeBackPressure.Load(pending: 0, inbox: 0, backendFailing: false)
        var limits: IntakeBackPressure.Limits?
        var stopped = false
        /// Drops posted and not taken yet.
        var inTransit = 0
        var refused: [(name: String, error: SpoolError)] = []
        /// Whether the sender sleeps on `wakeFD` (the engine writes it then only).
        var waiting = false
        /// The current offer's number, and whether the engine's timer for
        /// its waits has run out.
        var offer = 0
        var gaveUp = false

        /// Whether the load is the engine's own word: nothing in transit, and
        /// the engine has published. A wait on it is a wait for room (the
        /// caller is told: READY at start-up); one on an estimate is only
        /// for the engine's word, which comes once it has taken the batch.
        var isTold: Bool { limits != nil && inTransit == 0 }

        /// The load counting what is in transit as pending fresh keys.
        var projected: IntakeBackPressure.Load {
            var load = self.load
            load.pending += inTransit
            load.inbox += inTransit
            return load
        }
    }

    /// A link of the thread `sender` to `engine`, which learns of it before
    /// the first batch (the engine's thread runs what is posted in order).
    /// Fails as a thread's start does (ThreadExecutor's eventfd likewise).
    init(engine: DeliveryEngine, sender: String) throws(ThreadStartError) {
        self.engine = engine
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else { throw ThreadStartError(name: sender, code: errno) }
        engine.post { [self] in $0.register(self) }
    }

    deinit {
        close(wakeFD)
    }

    // MARK: The sender's side

    /// Hands `drops` to the engine, waiting first for room in the window for
    /// all of them (unless `waitsForWindow` is false: bulk), then for room
    /// for one more and fewer than `highWater` pending; both waits together
    /// last at most `inboxWindowWait` on the engine's clock, and `whenWaiting`
    /// is called before each wait for room, not before a wait for the
    /// engine's word on a batch in transit (intake's start-up scan sends
    /// READY=1 then).
    /// Returns the refusals that have come back so far (of this batch or
    /// earlier ones), and whether the engine is full: the caller then takes
    /// no more drops until the engine asks it to read new/ again.
    func offer(_ drops: [Drop], waitsForWindow: Bool, whenWaiting: () -> Void) -> DeliveryEngine.Offered {
        let number = state.withLock { state in
            state.offer += 1
            state.gaveUp = false
            return state.offer
        }
        var armed = false
        func wait(forRoom: Bool) {
            if !armed {
                armed = true
                engine.post { [self] in $0.timeIntakeWait(of: self, offer: number) }
            }
            if forRoom { whenWaiting() }
            sleep()
        }
        while true {
            let verdict = needsToWait(before: drops.count, waitsForWindow: waitsForWindow)
            guard verdict.wait else { break }
            wait(forRoom: verdict.forRoom)
        }
        state.withLock { $0.inTransit += drops.count }
        engine.post { [self] in $0.take(drops, from: self) }
        var offered = DeliveryEngine.Offered()
        while true {
            let verdict = state.withLock { state -> (wait: Bool, forRoom: Bool, full: Bool) in
                guard !state.stopped else { return (false, false, false) }
                var full = false
                let lacksRoom = state.limits.map { limits in
                    let load = state.projected
                    full = IntakeBackPressure.isFull(load, limits)
                    return full || (waitsForWindow && IntakeBackPressure.windowLacksRoom(for: 1, load, limits))
                } ?? true
                // Room, or none and the wait is over: decided on the
                // engine's own word, never on the estimate of what is in
                // transit (a batch of keys already pending adds none).
                let decided = !lacksRoom || (state.gaveUp && state.isTold)
                // Said under the lock that decided it: a wake-up the
                // engine sends from now on is not missed.
                state.waiting = !decided
                return (state.waiting, state.isTold, decided && lacksRoom && full)
            }
            if verdict.full {
                offered.full = true
                engine.post { $0.intakeStoppedTaking() }
            }
            guard verdict.wait else { break }
            wait(forRoom: verdict.forRoom)
        }
        // A wait that ended before its timer: the timer goes too.
        if armed { engine.post { [self] in $0.endIntakeWait(of: self) } }
        offered.refused = takeRefused()
        return offered
    }

    /// Waits until the engine has taken every batch posted, and returns the
    /// refusals not returned yet.
    func settle() -> [(name: String, error: SpoolError)] {
        while state.withLock({ state in
            guard state.inTransit > 0, !state.stopped else { return false }
            state.waiting = true
            return true
        }) {
            sleep()
        }
        return takeRefused()
    }

    /// Whether the window lacks room for `count` more (then the sender
    /// waits, as it says here), and whether that is a wait for room (see
    /// `isTold`).
    private func needsToWait(before count: Int, waitsForWindow: Bool) -> (wait: Bool, forRoom: Bool) {
        state.withLock { state in
            guard waitsForWindow, !state.stopped, !state.gaveUp else { return (false, false) }
            state.waiting = state.limits.map { IntakeBackPressure.windowLacksRoom(for: count, state.projected, $0) }
                ?? true
            return (state.waiting, state.isTold)
        }
    }

    private func takeRefused() -> [(name: String, error: SpoolError)] {
        state.withLock { state in
            defer { state.refused.removeAll() }
            return state.refused
        }
    }

    /// Sleeps until the engine writes the eventfd (at once if it did since
    /// the sender said it waits, under the lock that decided so).
    private func sleep() {
        var count: UInt64 = 0
        while read(wakeFD, &count, 8) < 0 && errno == EINTR {}
        state.withLock { $0.waiting = false }
    }

    // MARK: The engine's side (on its thread)

    /// The engine's load and limits now; wakes a waiting sender when
    /// `wakes` (there is room again, the backend failed, or the limits
    /// changed).
    func publish(_ load: IntakeBackPressure.Load, _ limits: IntakeBackPressure.Limits, wakes: Bool) {
        change(waking: wakes) { state in
            state.load = load
            state.limits = limits
        }
    }

    /// The engine took a batch of `count` drops, all but `refused`.
    func took(_ count: Int, refused: [(name: String, error: SpoolError)], load: IntakeBackPressure.Load,
              limits: IntakeBackPressure.Limits) {
        change { state in
            state.inTransit -= count
            state.refused += refused
            state.load = load
            state.limits = limits
        }
    }

    /// The engine's timer of offer `number`'s waits ran out.
    func giveUp(offer number: Int) {
        change { state in
            if state.offer == number { state.gaveUp = true }
        }
    }

    /// The engine stops: no wait lasts, and nothing posted is taken.
    func engineStopped() {
        change { $0.stopped = true }
    }

    /// Makes `update` under the lock, then wakes the sender if it waits
    /// (and `waking`): it looks again at what changed.
    private func change(waking: Bool = true, _ update: (inout State) -> Void) {
        let wake = state.withLock { state in
            update(&state)
            return waking && state.waiting
        }
        guard wake else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }
}
