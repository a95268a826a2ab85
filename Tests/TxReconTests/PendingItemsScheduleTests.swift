// PendingItems' schedule without an engine: the keys restored from queue/
// at start, a failed attempt's record, and the keys woken when the backend
// answers again.
import Testing
@testable import TxRecon

@Suite struct PendingItemsScheduleTests {
    let wall: Int64 = 1_800_000_000_000
    let now = Duration.seconds(100)

    func state(attempts: Int, nextIn milliseconds: Int64?, planned: Int64?) -> DeliveryState {
        var state = DeliveryState()
        state.attempts = attempts
        state.nextAttemptAt = milliseconds.map { wall + $0 }
        state.delayMilliseconds = planned
        return state
    }

    @Test func aRestartKeepsEachKeysBackoffAndPullsInWhatTheWallClockPushedAway() {
        var pending = PendingItems()
        let k = { ItemKey($0)! }
        pending.restore([
            QueuedFile(key: k("fresh"), state: nil, receivedAt: 1),
            QueuedFile(key: k("waiting"), state: state(attempts: 2, nextIn: 5_000, planned: 15_000), receivedAt: 2),
            // The wall clock went back an hour: due by its planned delay, not in an hour.
            QueuedFile(key: k("jumped"), state: state(attempts: 3, nextIn: 3_600_000, planned: 30_000), receivedAt: 3),
            // No planned delay recorded (an older state): the schedule's longest.
            QueuedFile(key: k("old"), state: state(attempts: 9, nextIn: 3_600_000, planned: nil), receivedAt: 4),
            QueuedFile(key: k("due"), state: state(attempts: 1, nextIn: -1_000, planned: 2_000), receivedAt: 5),
        ], now: now, wall: wall, longestDelay: .seconds(300))
        #expect(pending.entries.count == 5)
        #expect(pending.entries[k("fresh")]?.deadline == now)
        #expect(pending.entries[k("fresh")]?.hasStateFile == false)
        #expect(pending.entries[k("fresh")]?.waitsForBackend == false)
        #expect(pending.entries[k("waiting")]?.deadline == now + .seconds(5))
        #expect(pending.entries[k("waiting")]?.hasStateFile == true)
        #expect(pending.entries[k("waiting")]?.waitsForBackend == true)
        #expect(pending.entries[k("jumped")]?.deadline == now + .seconds(30))
        #expect(pending.entries[k("old")]?.deadline == now + .seconds(300))
        #expect(pending.entries[k("due")]?.deadline == now)
        #expect(pending.next(now: now)?.key == k("fresh"))
    }

    @Test func aFailedAttemptIsCountedAndItsNextAttemptRecordedForTheStateFile() {
        var entry = PendingItems.Entry(state: state(attempts: 1, nextIn: nil, planned: nil), deadline: now,
                                       receivedAt: 0)
        entry.failed(reason: "HTTP 503", status: 503, nextAfter: .seconds(5), now: now, wall: wall,
                     waitsForBackend: true)
        #expect(entry.state.attempts == 2)
        #expect(entry.state.nextAttemptAt == wall + 5_000)
        #expect(entry.state.delayMilliseconds == 5_000)
        #expect(entry.state.lastError == "HTTP 503" && entry.state.lastStatus == 503)
        #expect(entry.deadline == now + .seconds(5))
        #expect(entry.waitsForBackend)
    }

    @Test func aRecoveredBackendWakesOnlyTheKeysWaitingForItThatAreNotInFlight() {
        var pending = PendingItems()
        let later = now + .seconds(60)
        for (name, waits, inFlight) in [("backend", true, false), ("own", false, false), ("flying", true, true)] {
            var entry = PendingItems.Entry(state: DeliveryState(), deadline: later, receivedAt: 0, waitsForBackend: waits)
            entry.inFlight = inFlight
            pending.add(ItemKey(name)!, entry)
        }
        #expect(pending.wakeWaitingForBackend(now: now) == 1)
        #expect(pending.entries[ItemKey("backend")!]?.deadline == now)
        #expect(pending.entries[ItemKey("backend")!]?.waitsForBackend == false)
        #expect(pending.entries[ItemKey("own")!]?.deadline == later)
        #expect(pending.entries[ItemKey("flying")!]?.deadline == later)
        #expect(pending.next(now: now)?.key == ItemKey("backend")!)
    }
}
