// AttemptVerdict as a table: what each report of an ended attempt means for
// its key, the one policy for a spool move that failed included. Pure: no
// spool, no engine, no clock.
import Glibc
import Testing
@testable import TxRecon

@Suite struct AttemptVerdictTests {
    let key = ItemKey("k")!
    static let transient = SpoolError("rename", "queue/k", EIO)
    static let permanent = SpoolError("rename", "queue/k", ENAMETOOLONG)

    func answered(_ outcome: Outcome, error: SpoolError? = nil, outboxFailed: Bool = false, inbox: String? = nil,
                  metOutage: Bool = false) -> AttemptVerdict {
        var settlement = Attempt.Settlement(outcome: outcome, spoolError: error, sentAt: .zero)
        settlement.outboxFailed = outboxFailed
        return .answered(key, settlement, attempt: 2, inbox: inbox, metOutage: metOutage)
    }

    @Test func aConfirmedDeliveryIsDeliveredAndTheBackendAnswered() {
        let verdict = answered(.delivered(.http(status: 204)), inbox: "n1")
        #expect(verdict == AttemptVerdict(fate: .delivered(.http(status: 204)), backendAnswered: true, leftInbox: true))
    }

    @Test func aRefusalIsHeldWithTheBackendsReasonAndStatus() {
        let verdict = answered(.hold(reason: "HTTP 422: bad", status: 422))
        #expect(verdict == AttemptVerdict(fate: .refused(reason: "HTTP 422: bad", status: 422), backendAnswered: true))
    }

    @Test func aFailureIsRetriedAgainstTheBackendAndLetsAWaitingSnapshotIn() {
        let verdict = answered(.retryLater(reason: "HTTP 503", status: 503, retryAfter: .seconds(7)))
        let retry = AttemptVerdict.Retry(reason: "HTTP 503", status: 503, retryAfter: .seconds(7),
                                         countsAgainstBackend: true, placesParked: true, watchesDeadline: true)
        #expect(verdict == AttemptVerdict(fate: .retry(retry)))
    }

    @Test func aFailureSentBeforeAnOutageEndedGoesAgainAtOnceWithoutCountingAgainstTheBackend() {
        guard case let .retry(retry) = answered(.retryLater(reason: "timed out", status: nil, retryAfter: nil),
                                                metOutage: true).fate else {
            Issue.record("not a retry")
            return
        }
        #expect(retry.atOnce && !retry.countsAgainstBackend)
    }

    @Test func aFailedFirstAttemptFromNewIsAcceptedIntoQueueOrStaysInNewWithAWarning() {
        let moved = answered(.retryLater(reason: "HTTP 500", status: 500, retryAfter: nil), inbox: "n1")
        #expect(moved.leftInbox && moved.acceptedFromInbox && moved.note == nil)
        let stayed = answered(.retryLater(reason: "HTTP 500", status: 500, retryAfter: nil), error: Self.permanent,
                              inbox: "n1")
        #expect(!stayed.leftInbox && !stayed.acceptedFromInbox)
        #expect(stayed.note?.priority == .warning)
        #expect(stayed.note?.message.contains("new/n1 could not be moved to queue/") == true)
        guard case .retry = stayed.fate else {
            Issue.record("a file that cannot leave new/ is not set aside: \(stayed.fate)")
            return
        }
    }

    @Test func aDeliveredItemThatCannotBeMovedIsDeliveredAgainOrSetAsideByOnePolicy() {
        let again = answered(.delivered(.http(status: 200)), error: Self.transient, inbox: "n1")
        #expect(again.fate == .retry(AttemptVerdict.Retry(reason: "spool: \(Self.transient)", countsAgainstBackend: false)))
        #expect(again.backendAnswered && !again.leftInbox)
        #expect(again.note?.priority == .error && again.note?.message.contains("delivered but not moved to done/") == true)
        let aside = answered(.delivered(.http(status: 200)), error: Self.permanent)
        guard case let .setAside(because) = aside.fate else {
            Issue.record("not set aside: \(aside.fate)")
            return
        }
        #expect(because.contains("delivered on attempt 2 (HTTP 200), but it cannot be moved into done/"))
        #expect(aside.backendAnswered && aside.note == nil)
    }

    @Test func aRefusedItemThatCannotBeHeldFollowsTheSamePolicyAndTheBackendStillAnswered() {
        let again = answered(.hold(reason: "HTTP 409", status: 409), error: Self.transient)
        #expect(again.fate == .retry(AttemptVerdict.Retry(reason: "HTTP 409", status: 409, countsAgainstBackend: false)))
        #expect(again.backendAnswered && again.note?.priority == .error)
        let aside = answered(.hold(reason: "HTTP 409", status: 409), error: Self.permanent)
        guard case let .setAside(because) = aside.fate else {
            Issue.record("not set aside: \(aside.fate)")
            return
        }
        #expect(because.contains("cannot be moved into hold/"))
        #expect(aside.backendAnswered)
    }

    @Test func anOutboxThatCannotTakeTheAnswerAlwaysRetriesEvenForAPermanentError() {
        let verdict = answered(.delivered(.http(status: 200)), error: Self.permanent, outboxFailed: true)
        #expect(verdict.fate == .retry(AttemptVerdict.Retry(reason: "outbox: \(Self.permanent)", countsAgainstBackend: false)))
        #expect(verdict.backendAnswered)
        #expect(verdict.note?.message.contains("what it owes Apple could not be written into the outbox") == true)
    }

    @Test func aQueuedFileThatIsGoneIsForgottenWithAWarning() {
        let verdict = AttemptVerdict.local(key, .missing)
        #expect(verdict.fate == .forgotten && !verdict.backendAnswered)
        #expect(verdict.note?.priority == .warning)
    }

    @Test func aQueuedFileThatNoLongerDecodesIsHeldOrFollowsTheMovePolicy() {
        let held = AttemptVerdict.local(key, .undecodable(reason: "queued file no longer decodes", holdError: nil))
        #expect(held.fate == .heldUndecodable(reason: "queued file no longer decodes"))
        #expect(held.note?.priority == .error && held.note?.message.hasSuffix("moved to hold/") == true)
        let again = AttemptVerdict.local(key, .undecodable(reason: "queued file no longer decodes",
                                                           holdError: Self.transient))
        #expect(again.fate == .retry(AttemptVerdict.Retry(reason: "queued file no longer decodes",
                                                          countsAgainstBackend: false)))
        guard case .setAside = AttemptVerdict.local(key, .undecodable(reason: "r", holdError: Self.permanent)).fate else {
            Issue.record("a file that can never be held is not set aside")
            return
        }
    }

    @Test func anUnreadableQueuedFileIsRetriedOrSetAsideAndNeverCountsAgainstTheBackend() {
        let again = AttemptVerdict.local(key, .unreadable(Self.transient))
        #expect(again.fate == .retry(AttemptVerdict.Retry(reason: "spool: \(Self.transient)", countsAgainstBackend: false)))
        let aside = AttemptVerdict.local(key, .unreadable(Self.permanent))
        #expect(aside.fate == .setAside(because: "its queued file cannot be read: \(Self.permanent)"))
        #expect(!again.backendAnswered && !aside.backendAnswered)
    }
}
