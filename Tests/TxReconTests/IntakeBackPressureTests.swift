// Intake's back-pressure as rules on the engine's load; the waits on them
// are IntakeHandOff's (DeliveryEngineTests, "intake's hand-over").
import Testing
@testable import TxRecon

@Suite(.timeLimit(.minutes(1))) struct IntakeBackPressureTests {
    let limits = IntakeBackPressure.Limits(inboxWindow: 100, highWater: 1_000, lowWater: 900)

    func load(pending: Int = 0, inbox: Int = 0, failing: Bool = false) -> IntakeBackPressure.Load {
        IntakeBackPressure.Load(pending: pending, inbox: inbox, backendFailing: failing)
    }

    @Test func aBatchWaitsForRoomInTheWindowUnlessTheWindowIsEmptyOrTheBackendFails() {
        #expect(!IntakeBackPressure.windowLacksRoom(for: 50, load(inbox: 50), limits), "50 + 50 fit")
        #expect(IntakeBackPressure.windowLacksRoom(for: 51, load(inbox: 50), limits))
        #expect(!IntakeBackPressure.windowLacksRoom(for: 5_000, load(inbox: 0), limits),
                "an empty window never makes a batch wait, however large")
        #expect(IntakeBackPressure.windowLacksRoom(for: 5_000, load(inbox: 1), limits),
                "a batch larger than the window waits for the whole window")
        #expect(!IntakeBackPressure.windowLacksRoom(for: 51, load(inbox: 50, failing: true), limits),
                "while the backend fails, fresh keys go to queue/ instead")
    }

    @Test func freshKeysWaitInNewOnlyWhileTheWindowHasRoomAndTheBackendAnswers() {
        #expect(IntakeBackPressure.freshKeyWaitsInInbox(load(inbox: 99), limits))
        #expect(!IntakeBackPressure.freshKeyWaitsInInbox(load(inbox: 100), limits))
        #expect(!IntakeBackPressure.freshKeyWaitsInInbox(load(inbox: 0, failing: true), limits))
    }

    @Test func fullAtTheHighWaterMarkAndRoomAgainBelowTheLowOne() {
        #expect(!IntakeBackPressure.isFull(load(pending: 999), limits))
        #expect(IntakeBackPressure.isFull(load(pending: 1_000), limits))
        #expect(!IntakeBackPressure.hasRoomAgain(load(pending: 900), limits))
        #expect(IntakeBackPressure.hasRoomAgain(load(pending: 899, inbox: 75), limits))
        #expect(!IntakeBackPressure.hasRoomAgain(load(pending: 899, inbox: 76), limits),
                "a quarter of the window free first: batches, not single drops")
        #expect(IntakeBackPressure.hasRoomAgain(load(pending: 899, inbox: 100, failing: true), limits))
    }
}
