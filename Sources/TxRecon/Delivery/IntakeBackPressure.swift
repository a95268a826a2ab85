// IntakeBackPressure: when intake must wait before it hands the engine more
// drops, decided from the engine's load and limits alone (pure); the waits
// themselves are intake's (IntakeHandOff).
//
// At most `inboxWindow` fresh keys wait in new/ for their first attempt (a
// key beyond it goes to queue/, a rename each); intake waits for room in
// the window for a whole batch, except while the backend is failing (its
// attempts may take a timeout each; fresh keys go to queue/ then). With
// `highWater` keys pending intake stops taking drops, and reads new/ again
// once fewer than `lowWater` are. Reports nothing.

enum IntakeBackPressure {
    struct Limits: Sendable, Equatable {
        var inboxWindow: Int
        var highWater: Int
        var lowWater: Int
    }

    /// What the engine holds now.
    struct Load: Sendable, Equatable {
        /// Keys pending (in flight included).
        var pending: Int
        /// Of them, fresh keys whose file is still in new/.
        var inbox: Int
        var backendFailing: Bool
    }

    /// Whether a fresh key waits in new/ (not queue/) for its first attempt.
    static func freshKeyWaitsInInbox(_ load: Load, _ limits: Limits) -> Bool {
        !load.backendFailing && load.inbox < limits.inboxWindow
    }

    /// Whether intake should wait for room in the window for `count` more
    /// fresh keys (at most the whole window): it empties as attempts end (a
    /// window of 0 never fills).
    static func windowLacksRoom(for count: Int, _ load: Load, _ limits: Limits) -> Bool {
        !load.backendFailing && load.inbox > 0 && load.inbox + min(count, limits.inboxWindow) > limits.inboxWindow
    }

    static func isFull(_ load: Load, _ limits: Limits) -> Bool {
        load.pending >= limits.highWater
    }

    /// Whether waiting intake should look again after an attempt: below the
    /// low-water mark, and a quarter of the window free (so that intake hands
    /// over batches, not single drops) or the backend failing.
    static func hasRoomAgain(_ load: Load, _ limits: Limits) -> Bool {
        load.pending < limits.lowWater && (load.inbox <= limits.inboxWindow * 3 / 4 || load.backendFailing)
    }
}

/// The engine's side of its link with intake: the senders it tells its
/// load and wakes (IntakeHandOff), the timers of their waits, and the call
/// that has intake read new/ again (drops it handed over could not be taken
/// after all and stay there, or it left drops there at the high-water mark
/// and there is room again). Used on the engine's executor only.
struct IntakeLink {
    var senders: [IntakeHandOff] = []
    var waitTimers: [ObjectIdentifier: EngineTimer] = [:]
    var readInboxAgain: @Sendable () -> Void = {}
}
