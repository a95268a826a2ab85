// OutboxTests: the daemon's side of the outbox: what a backend's answer to a
// CONSUMPTION_REQUEST gives (ConsumptionAnswer), which confirmed items are
// purchases to finish (PurchaseToFinish), the entry's file and name
// (OutboxEntry), and AnswerTaker writing entries durably, once, and only
// after the last destination that takes a purchase confirmed it.
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

/// The item intake decodes from `input` (not verified: these tests decide
/// on decoded fields only).
private func item(_ input: String) throws -> Item {
    guard case .item(let item) = try InputDecoder().decode(Array(input.utf8)) else {
        Issue.record("not one item")
        throw OutboxEntryError("not one item")
    }
    return item
}

private let signed: Int64 = 1_760_000_000_000

/// A transaction signed `signed`, purchased `age` ms before, with `extra` members.
private func purchase(id: String = "2000000123456789", age: Int64 = 60_000,
                      extra: [(String, JSONValue)] = [], environment: String = "Sandbox") throws -> Item {
    var members = extra
    members.append(("purchaseDate", .integer(signed - age)))
    return try item(TestJWS.make(payload: TestJWS.transactionPayload(transactionId: id, environment: environment,
                                                                     signedDate: signed, extra: members)))
}

/// A notification of `type` carrying a purchase of `id`.
private func notification(_ type: String, id: String = "2000000123456789", requestSigned: Int64 = signed + 500)
    throws -> Item {
    let transaction = TestJWS.make(payload: TestJWS.transactionPayload(transactionId: id, signedDate: signed))
    let payload = TestJWS.notificationPayload(notificationType: type, signedDate: requestSigned,
                                              signedTransactionInfo: transaction)
    return try item("{\"signedPayload\":\"\(TestJWS.make(payload: payload))\"}")
}

private let information: JSONValue = .object([
    ("customerConsented", .bool(true)), ("deliveryStatus", .string("DELIVERED")),
    ("sampleContentProvided", .bool(false)),
])


@Suite struct ConsumptionAnswerTests {
    @Test func takesTheConsumptionInformationObject() {
        #expect(ConsumptionAnswer.read(bytes(#"{"consumptionInformation":{"customerConsented":true}}"#))
            == .information(.object([("customerConsented", .bool(true))])))
    }

    @Test func anEmptyBodyOrOneWithoutTheMemberIsNoAnswer() {
        #expect(ConsumptionAnswer.read([]) == .none)
        #expect(ConsumptionAnswer.read(bytes(" \r\n")) == .none)
        #expect(ConsumptionAnswer.read(bytes(#"{"ok":true}"#)) == .none)
    }

    @Test func aBodyThatIsNotJSONIsIgnoredWithTheReason() {
        #expect(ConsumptionAnswer.read(bytes("OK")) == .ignored("the answer's body is not JSON"))
    }

    @Test func aBodyLargerThan64KiBIsIgnored() {
        var body = bytes(#"{"consumptionInformation":{"pad":""#)
        body += [UInt8](repeating: UInt8(ascii: "a"), count: ConsumptionAnswer.bodyLimit)
        body += bytes(#""}}"#)
        guard case .ignored(let why) = ConsumptionAnswer.read(body) else {
            Issue.record("a body over 64 KiB was taken")
            return
        }
        #expect(why.contains("64 KiB"))
    }

    @Test func consumptionInformationThatIsNotAnObjectIsIgnored() {
        #expect(ConsumptionAnswer.read(bytes(#"{"consumptionInformation":[1]}"#))
            == .ignored("consumptionInformation in the answer is not an object"))
    }
}

@Suite struct PurchaseToFinishTests {
    @Test func aFreshPurchaseOrRenewalIsFinished() throws {
        #expect(PurchaseToFinish.transaction(of: try purchase())?.id == "2000000123456789")
        let renewal = try purchase(extra: [("transactionReason", .string("RENEWAL"))])
        #expect(PurchaseToFinish.transaction(of: renewal)?.environment == .sandbox)
        for type in ["SUBSCRIBED", "DID_RENEW", "ONE_TIME_CHARGE"] {
            #expect(PurchaseToFinish.transaction(of: try notification(type)) != nil, "\(type)")
        }
    }

    @Test func historySignedLongAfterThePurchaseIsNotFinished() throws {
        let limit = PurchaseToFinish.signedWithin.milliseconds
        #expect(PurchaseToFinish.transaction(of: try purchase(age: limit)) != nil)
        #expect(PurchaseToFinish.transaction(of: try purchase(age: limit + 1)) == nil)
    }

    @Test func refundsRequestsAndOtherReasonsAreNeverFinished() throws {
        let revoked = try item(TestJWS.make(payload: TestJWS.transactionPayload(signedDate: signed,
                                                                                revocationDate: signed)))
        #expect(PurchaseToFinish.transaction(of: revoked) == nil)
        for type in ["REFUND", "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_STATUS", "REVOKE"] {
            #expect(PurchaseToFinish.transaction(of: try notification(type)) == nil, "\(type)")
        }
        let other = try purchase(extra: [("transactionReason", .string("SOMETHING_NEW"))])
        #expect(PurchaseToFinish.transaction(of: other) == nil)
    }

    @Test func environmentsApplesAPIDoesNotServeAreNotFinished() throws {
        #expect(PurchaseToFinish.transaction(of: try purchase(environment: "Xcode")) == nil)
    }
}

@Suite struct OutboxEntryTests {
    @Test func anEntryReadsBackAsWritten() throws {
        let entry = OutboxEntry(kind: .consumption, transactionId: "2000000123456789", environment: .sandbox,
                                bundleId: "com.example.app", requestedAt: signed, confirmedAt: signed + 9,
                                destination: "backend", consumptionInformation: information)
        #expect(try OutboxEntry(json: entry.json) == entry)
        #expect(entry.fileName == "consumption.Sandbox.2000000123456789.\(signed).json")
        #expect(entry.deadline == signed + 12 * 3_600_000)
        #expect(OutboxEntry.isEntryName(entry.fileName))
    }

    @Test func aFinishIsNamedByItsTransactionAlone() {
        let entry = OutboxEntry(kind: .finish, transactionId: "a/b", environment: .production, bundleId: nil,
                                requestedAt: nil, confirmedAt: 1, destination: "backend", consumptionInformation: nil)
        #expect(entry.fileName == "finish.Production.a%2Fb.json")
    }

    @Test func aFileThatIsNotAnEntryIsRefusedWithTheReason() {
        #expect(throws: OutboxEntryError("kind is not consumption or finish")) {
            try OutboxEntry(json: bytes(#"{"kind":"refund"}"#))
        }
        #expect(throws: OutboxEntryError("a consumption entry without requestedAt or a consumptionInformation object")) {
            try OutboxEntry(json: bytes(#"{"kind":"consumption","transactionId":"1","environment":"Sandbox","confirmedAt":1,"destination":"b"}"#))
        }
    }
}

@Suite struct AnswerTakerTests {
    private func taker(_ directory: TemporaryDirectory, finish: Bool = false,
                       destinations: [String] = ["backend"]) throws -> (AnswerTaker, Outbox) {
        let outbox = Outbox(spool: directory.path)
        try outbox.prepare()
        let taker = AnswerTaker(AnswerTaker.Settings(outbox: outbox, answeringDestination: "backend",
                                                     finishTransactions: finish,
                                                     destinations: destinations.map { ($0, DestinationMatch()) }))
        return (taker, outbox)
    }

    @Test func theAnsweringDestinationsConsumptionInformationBecomesAnEntry() throws {
        let directory = TemporaryDirectory()
        let (taker, outbox) = try taker(directory)
        let request = try notification("CONSUMPTION_REQUEST")
        #expect(taker.readsAnswer(to: request, from: "backend"))
        #expect(!taker.readsAnswer(to: request, from: "other"))
        let body = bytes(#"{"consumptionInformation":{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}}"#)
        let notes = try taker.take(request, confirmedBy: "backend", body: body, at: 42)
        let name = "consumption.Sandbox.2000000123456789.\(signed + 500).json"
        #expect(notes == [.wrote(name)])
        let entry = try OutboxEntry(json: outbox.read(name, in: outbox.new))
        #expect(entry.consumptionInformation == information)
        #expect(entry.requestedAt == signed + 500)
        // Another destination's answer is not Apple's answer.
        #expect(try taker.take(request, confirmedBy: "other", body: body, at: 43).isEmpty)
    }

    @Test func anAnswerSentAlreadyIsNotWrittenAgain() throws {
        let directory = TemporaryDirectory()
        let (taker, outbox) = try taker(directory)
        let request = try notification("CONSUMPTION_REQUEST")
        let body = bytes(#"{"consumptionInformation":{"customerConsented":true}}"#)
        guard case .wrote(let name) = try taker.take(request, confirmedBy: "backend", body: body, at: 1).first else {
            Issue.record("no entry")
            return
        }
        try outbox.move(name, from: outbox.new, to: outbox.sent)
        #expect(try taker.take(request, confirmedBy: "backend", body: body, at: 2).isEmpty)
        #expect(try outbox.entries(in: outbox.new).isEmpty)
    }

    @Test func purchasesAreFinishedOnlyWithFinishTransactions() throws {
        let directory = TemporaryDirectory()
        let (off, _) = try taker(directory)
        #expect(try off.take(try purchase(), confirmedBy: "backend", body: [], at: 1).isEmpty)
        let (on, outbox) = try taker(directory, finish: true)
        #expect(try on.take(try purchase(), confirmedBy: "backend", body: [], at: 1)
            == [.wrote("finish.Sandbox.2000000123456789.json")])
        #expect(try outbox.entries(in: outbox.new) == ["finish.Sandbox.2000000123456789.json"])
    }

    @Test func aPurchaseSeveralDestinationsTakeIsFinishedByTheLastConfirmation() throws {
        let directory = TemporaryDirectory()
        let (taker, outbox) = try taker(directory, finish: true, destinations: ["backend", "crm", "audit"])
        let name = "finish.Sandbox.2000000123456789.json"
        #expect(try taker.take(try purchase(), confirmedBy: "crm", body: [], at: 1)
            == [.awaitingDestinations(name, ["backend", "audit"])])
        // Confirmed again by the same destination: still waiting for the others.
        #expect(try taker.take(try purchase(), confirmedBy: "crm", body: [], at: 2)
            == [.awaitingDestinations(name, ["backend", "audit"])])
        #expect(try taker.take(try purchase(), confirmedBy: "audit", body: [], at: 3)
            == [.awaitingDestinations(name, ["backend"])])
        #expect(try outbox.entries(in: outbox.new).isEmpty)
        #expect(try taker.take(try purchase(), confirmedBy: "backend", body: [], at: 4) == [.wrote(name)])
        #expect(try outbox.entries(in: outbox.new) == [name])
        #expect(try SystemCall.listDirectory(outbox.confirmed).isEmpty, "the markers are cleared")
    }

    @Test func aPurchaseGivenUpIsSetAsideAndALateConfirmationLeavesNoMarker() throws {
        let directory = TemporaryDirectory()
        let (taker, outbox) = try taker(directory, finish: true, destinations: ["backend", "crm"])
        let name = "finish.Sandbox.2000000123456789.json"
        #expect(try taker.take(try purchase(), confirmedBy: "crm", body: [], at: 1)
            == [.awaitingDestinations(name, ["backend"])])
        let waiting = try #require(try outbox.confirmedPurchases().first)
        try outbox.withConfirmationsLocked { () throws(SpoolError) in
            try outbox.giveUp(waiting, reason: "not confirmed by every destination", at: 5)
        }
        let entry = try OutboxEntry(json: outbox.read(name, in: outbox.aside))
        #expect(entry.fileName == name && entry.transactionId == "2000000123456789" && entry.destination == "crm")
        #expect(outbox.reason(of: name) == "not confirmed by every destination")
        // Released from hold/ a month later, say: answered (set aside), so
        // neither an entry nor a marker of a new wait.
        #expect(try taker.take(try purchase(), confirmedBy: "backend", body: [], at: 6).isEmpty)
        #expect(try outbox.entries(in: outbox.new).isEmpty)
        #expect(try SystemCall.listDirectory(outbox.confirmed).isEmpty)
    }

    @Test func aFinishEntryIsMadeBackFromItsNameAlone() {
        let entry = OutboxEntry(kind: .finish, transactionId: "a/b c", environment: .production, bundleId: nil,
                                requestedAt: nil, confirmedAt: 7, destination: "crm", consumptionInformation: nil)
        #expect(OutboxEntry(finishNamed: entry.fileName, confirmedAt: 7, by: "crm") == entry)
        #expect(OutboxEntry(finishNamed: "finish.Sandbox.json", confirmedAt: 7, by: "crm") == nil)
        #expect(OutboxEntry(finishNamed: "consumption.Sandbox.1.2.json", confirmedAt: 7, by: "crm") == nil)
        #expect(OutboxEntry(finishNamed: "finish.Staging.1.json", confirmedAt: 7, by: "crm") == nil)
    }

    @Test func aDestinationWhoseMatchRefusesThePurchaseIsNotWaitedFor() throws {
        let directory = TemporaryDirectory()
        let outbox = Outbox(spool: directory.path)
        try outbox.prepare()
        var productionOnly = DestinationMatch()
        productionOnly.environments = ["Production"]
        let taker = AnswerTaker(AnswerTaker.Settings(outbox: outbox, answeringDestination: "backend",
                                                     finishTransactions: true,
                                                     destinations: [("backend", DestinationMatch()),
                                                                    ("live", productionOnly)]))
        #expect(try taker.take(try purchase(), confirmedBy: "backend", body: [], at: 1)
            == [.wrote("finish.Sandbox.2000000123456789.json")])
    }

    @Test func aFailedWriteThrowsSoThatTheItemIsKept() throws {
        let directory = TemporaryDirectory()
        let (taker, outbox) = try taker(directory, finish: true)
        try SystemCall.unlinkIfPresent(outbox.tmp + "/x")
        rmdir(outbox.tmp)
        #expect(throws: SpoolError.self) {
            _ = try taker.take(try purchase(), confirmedBy: "backend", body: [], at: 1)
        }
        #expect(try outbox.entries(in: outbox.new).isEmpty)
    }
}
