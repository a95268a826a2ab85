// What a JetStream answer means for the item: the stream's response table.
import Testing
@testable import TxRecon

@Suite struct JetStreamOutcomeTests {
    @Test func anAcknowledgementADuplicateToFinishesTheItem() {
        #expect(Outcome(.published(stream: "ORDERS", sequence: 42, duplicate: false), now: 0, redactor: SecretRedactor())
                == .delivered(.stream(name: "ORDERS", sequence: 42, duplicate: false)))
        let duplicate = Outcome(.published(stream: "ORDERS", sequence: 7, duplicate: true), now: 0, redactor: SecretRedactor())
        #expect(duplicate == .delivered(.stream(name: "ORDERS", sequence: 7, duplicate: true)))
        if case let .delivered(confirmation) = duplicate {
            #expect(confirmation.description == "stream ORDERS sequence 7 (a duplicate)")
        }
    }

    @Test(arguments: [10054])
    func aStreamThatRefusesForGoodHoldsTheItem(code: Int) {
        guard case let .hold(reason, status) = Outcome(.streamError(code: code, description: "nope"), now: 0, redactor: SecretRedactor()) else {
            Issue.record("not held")
            return
        }
        #expect(reason.hasPrefix("JetStream error \(code) (") && reason.hasSuffix("): nope") && status == nil)
    }

    @Test(arguments: [10059, 10060])
    func aStreamThatChangedSinceItWasCheckedIsRetriedNotHeld(code: Int) {
        // Gone (10059) or not the one capturing the subject (10060): like a
        // stream not created yet, the destination is probed, and the items
        // need no release once the stream is put right.
        guard case let .retryLater(reason, status, retryAfter) = Outcome(.streamError(code: code, description: "gone"), now: 0,
                                                                         redactor: SecretRedactor()) else {
            Issue.record("not retried")
            return
        }
        #expect(reason.hasPrefix("JetStream error \(code) (") && reason.contains("checked again") && status == nil
                    && retryAfter == nil)
    }

    @Test(arguments: [10008, 10077, 10076])
    func anyOtherStreamErrorIsRetried(code: Int) {
        #expect(Outcome(.streamError(code: code, description: "busy"), now: 0, redactor: SecretRedactor())
                == .retryLater(reason: "JetStream error \(code): busy", status: nil, retryAfter: nil))
    }

    @Test func noConnectionIsRetried() {
        let failure = TransportFailure(.connect, "no responders on txrecon.k")
        #expect(JetStreamOutcome.outcome(of: .failure(failure))
                == .retryLater(reason: "connection failed: no responders on txrecon.k", status: nil, retryAfter: nil))
    }
}
