import Testing
import TxReconTestSupport
@testable import TxRecon

/// Decodes `bytes`, returning the item or failing the test.
func decodeItem(_ bytes: [UInt8], _ decoder: InputDecoder = InputDecoder(),
                sourceLocation: SourceLocation = #_sourceLocation) -> Item? {
    do {
        guard case let .item(item) = try decoder.decode(bytes) else {
            Issue.record("expected one item", sourceLocation: sourceLocation)
            return nil
        }
        return item
    } catch {
        Issue.record("refused: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Decodes `bytes`, returning the rejection or failing the test.
func decodeRejection(_ bytes: [UInt8], _ decoder: InputDecoder = InputDecoder(),
                     sourceLocation: SourceLocation = #_sourceLocation) -> Rejection? {
    do {
        let decoded = try decoder.decode(bytes)
        Issue.record("accepted: \(decoded)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite struct InputFormatTests {
    @Test func anUploadsOtherMembersAreItsUnverifiedContextAndDecideNothing() throws {
        let jws = TestJWS.transaction(transactionId: "2000000000000001", signedDate: 1_700_000_000_123)
        let upload = #"{"orderID":"A-17","signedTransactionInfo":"\#(jws)","applicationUsername":"order-17","n":{"a":1}}"#
        let item = try #require(decodeItem(bytes(upload)))
        #expect(item.context == .object([("orderID", .string("A-17")), ("applicationUsername", .string("order-17")),
                                         ("n", .object([("a", .integer(1))]))]))
        #expect(item.signedStrings.map(\.name) == ["signedTransactionInfo"], "context strings are not signed data")
        let plain = try #require(decodeItem(bytes(#"{"signedTransactionInfo":"\#(jws)"}"#)))
        #expect(plain.context == nil)
        #expect(item.key == plain.key && item.version == plain.version)
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["unverified"] == item.context)
        #expect(body["orderID"] == nil, "never mixed with the verified fields")
    }

    @Test func aBareTransactionJWSIsATransactionKeyedByTransactionId() throws {
        let jws = TestJWS.transaction(transactionId: "2000000000000001", signedDate: 1_700_000_000_123)
        let item = try #require(decodeItem(bytes(jws + "\n")))
        #expect(item.kind == .transaction)
        #expect(item.key.rawValue == "2000000000000001")
        #expect(item.version == ItemVersion(primary: 1_700_000_000_123))
        #expect(item.signedStrings.map(\.name) == ["signedTransactionInfo"])
        #expect(item.signedStrings.map(\.value) == [jws])
        #expect(item.payload == nil)
    }

    @Test func transactionFieldsAreFilledFromThePayload() throws {
        let payload = TestJWS.transactionPayload(transactionId: "7", originalTransactionId: "5", productId: "p.one",
                                                 bundleId: "com.example.x", environment: "Production",
                                                 signedDate: 42, revocationDate: 43,
                                                 extra: [("appAccountToken", .string("7e3fb20b-4cdb-47cc-936d-99d65f608138"))])
        let item = try #require(decodeItem(bytes(TestJWS.make(payload: payload))))
        var expected = ItemFields()
        expected.transactionId = "7"
        expected.originalTransactionId = "5"
        expected.productId = "p.one"
        expected.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        expected.bundleId = "com.example.x"
        expected.environment = "Production"
        expected.signedDate = 42
        expected.revocationDate = 43
        expected.transactionDigest = ContentDigest.of(payload)
        #expect(item.fields == expected)
    }

    @Test func aNotificationBodyWithATransactionIsKeyedByTheTransaction() throws {
        let transaction = TestJWS.transaction(transactionId: "2000000000000002", signedDate: 1_700_000_000_000)
        let renewal = TestJWS.renewalInfo()
        let signedPayload = TestJWS.make(payload: TestJWS.notificationPayload(
            notificationType: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED",
            signedDate: 1_700_000_000_900, signedTransactionInfo: transaction, signedRenewalInfo: renewal))
        let item = try #require(decodeItem(TestDrop.notificationBody(signedPayload)))
        #expect(item.kind == .notification)
        #expect(item.key.rawValue == "2000000000000002")
        #expect(item.version == ItemVersion(primary: 1_700_000_000_000, secondary: 1_700_000_000_900))
        #expect(item.fields.notificationType == "DID_CHANGE_RENEWAL_STATUS")
        #expect(item.fields.subtype == "AUTO_RENEW_DISABLED")
        #expect(item.fields.notificationUUID == "9b2f7c1e-5d0a-4a47-9c1e-0123456789ab")
        #expect(item.fields.transactionId == "2000000000000002")
        #expect(item.fields.signedDate == 1_700_000_000_000)
        #expect(item.signedStrings.map(\.name) == ["signedPayload", "signedTransactionInfo", "signedRenewalInfo"])
        #expect(item.signedStrings.map(\.value) == [signedPayload, transaction, renewal])
    }

    @Test func aNotificationWithoutATransactionIsKeyedByItsUUID() throws {
        let signedPayload = TestJWS.notification(notificationType: "TEST", notificationUUID: "u-1", signedDate: 99)
        let item = try #require(decodeItem(TestDrop.notificationBody(signedPayload)))
        #expect(item.key.rawValue == "u-1")
        #expect(item.version == ItemVersion(primary: 99))
        #expect(item.fields.bundleId == "com.example.app")
        #expect(item.fields.environment == "Sandbox")
        #expect(item.fields.signedDate == 99)
        #expect(item.fields.transactionId == nil)
    }

    @Test func aSummaryNotificationIsKeyedByItsUUIDWithTheSummaryBundle() throws {
        let payload = TestJWS.notificationPayload(notificationType: "RENEWAL_EXTENSION", subtype: "SUMMARY",
                                                  notificationUUID: "u-2", signedDate: 7)
            .removing("data")
            .merging([("summary", .object([("bundleId", .string("com.example.summary")),
                                           ("environment", .string("Production")),
                                           ("succeededCount", .integer(3))]))])
        let item = try #require(decodeItem(TestDrop.notificationBody(TestJWS.make(payload: payload))))
        #expect(item.key.rawValue == "u-2")
        #expect(item.fields.bundleId == "com.example.summary")
        #expect(item.fields.environment == "Production")
        #expect(item.signedStrings.map(\.name) == ["signedPayload"])
    }

    @Test func aBareNotificationJWSIsTakenLikeANotificationBody() throws {
        let signedPayload = TestJWS.notification(signedTransactionInfo: TestJWS.transaction())
        let bare = try #require(decodeItem(bytes(signedPayload + "\r\n")))
        let body = try #require(decodeItem(TestDrop.notificationBody(signedPayload)))
        #expect(bare == body)
    }

    @Test func aTransactionUploadIsATransactionWithBothSignedStrings() throws {
        let transaction = TestJWS.transaction(transactionId: "11", signedDate: 500)
        let renewal = TestJWS.renewalInfo()
        let item = try #require(decodeItem(TestDrop.transactionUpload(transaction, renewal: renewal)))
        #expect(item.kind == .transaction)
        #expect(item.key.rawValue == "11")
        #expect(item.version == ItemVersion(primary: 500))
        #expect(item.signedStrings.map(\.name) == ["signedTransactionInfo", "signedRenewalInfo"])
        #expect(item.signedStrings.map(\.value) == [transaction, renewal])
    }

    @Test func aTransactionUploadMayOmitTheRenewalInfo() throws {
        let item = try #require(decodeItem(TestDrop.transactionUpload(TestJWS.transaction(transactionId: "12"))))
        #expect(item.key.rawValue == "12")
        #expect(item.signedStrings.map(\.name) == ["signedTransactionInfo"])
    }

    @Test func aHistoryPageIsSplitIntoItsSignedTransactions() throws {
        let transactions = [TestJWS.transaction(transactionId: "1"), TestJWS.transaction(transactionId: "2")]
        #expect(try InputDecoder().decode(TestDrop.historyPage(transactions)) == .page(signedTransactions: transactions))
    }

    @Test func anEnvelopeKeepsItsPayloadAsGiven() throws {
        let text = #"{"id":"order-17","version":3,"payload":{"amount":2000000123456789012,"note":"x","n":null}}"#
        let item = try #require(decodeItem(bytes(text)))
        #expect(item.kind == .envelope)
        #expect(item.key.rawValue == "order-17")
        #expect(item.version == ItemVersion(primary: 3))
        #expect(item.payload?.serializedString == #"{"amount":2000000123456789012,"note":"x","n":null}"#)
        #expect(item.signedStrings.isEmpty)
    }

    @Test func anEnvelopeKeepsItsPayloadsExactText() throws {
        // Whitespace, escapes and the member order inside the payload as the
        // file holds them; the parsed payload is the same value.
        let payload = "{ \"b\" : 1.50,\n  \"a\": [\"caf\\u00e9\", null] }"
        let text = #"{"payload":"# + payload + #" , "id":"order-17","version":3}"#
        let item = try #require(decodeItem(bytes(text)))
        #expect(item.payloadText == bytes(payload))
        #expect(item.payload == (try JSONValue.parse(payload)))
    }

    @Test func aMemberNamedPayloadBesideAnotherFormatKeepsItsPlace() throws {
        // Set aside by the parser for envelopes, put back for the others:
        // the app's context keeps its members in their order.
        let transaction = TestJWS.transaction()
        let text = #"{"orderID":"A-17","payload":{"x":[1,2]},"signedTransactionInfo":""# + transaction
            + #"","applicationUsername":"order-17"}"#
        let item = try #require(decodeItem(bytes(text)))
        #expect(item.context
            == (try JSONValue.parse(#"{"orderID":"A-17","payload":{"x":[1,2]},"applicationUsername":"order-17"}"#)))
    }

    @Test func anEnvelopeWithAPayloadButNoIdIsRefusedForTheMissingId() throws {
        let rejection = try #require(decodeRejection(bytes(#"{"payload":{"a":1}}"#)))
        #expect(rejection.detail.contains("id"))
    }

    @Test func anEnvelopePayloadMayBeAnyJSONValue() throws {
        let item = try #require(decodeItem(TestDrop.envelope(id: "k", version: 0, payload: .null)))
        #expect(item.payload == .null)
    }

    @Test func trailingWhitespaceIsIgnoredInEveryFormat() throws {
        let transaction = TestJWS.transaction()
        for drop in [bytes(transaction), TestDrop.transactionUpload(transaction)] {
            let plain = try #require(decodeItem(drop))
            #expect(decodeItem(drop + bytes(" \t\r\n\n")) == plain)
        }
    }

    @Test func xcodeFractionalMillisecondsAreTruncated() throws {
        let payload = TestJWS.transactionPayload(extra: [("signedDate", .number("1697679936056.485"))])
        let item = try #require(decodeItem(bytes(TestJWS.make(payload: payload))))
        #expect(item.version == ItemVersion(primary: 1_697_679_936_056))
    }
}

@Suite struct VersionOrderingTests {
    @Test func aRefundOrdersAboveTheSameSignedDate() throws {
        let purchase = try #require(decodeItem(bytes(TestJWS.transaction(signedDate: 1_000))))
        let refund = try #require(decodeItem(bytes(TestJWS.transaction(signedDate: 1_000, revocationDate: 900))))
        #expect(purchase.key == refund.key)
        #expect(purchase.version < refund.version)
        #expect(refund.version.description == "1000r")
    }

    @Test func aLaterSignedDateOrdersAboveAnEarlierRefund() throws {
        let refund = try #require(decodeItem(bytes(TestJWS.transaction(signedDate: 1_000, revocationDate: 900))))
        let later = try #require(decodeItem(bytes(TestJWS.transaction(signedDate: 1_001))))
        #expect(refund.version < later.version)
    }

    @Test func aNotificationOrdersAboveTheBareTransactionItCarries() throws {
        let transaction = TestJWS.transaction(signedDate: 1_000)
        let bare = try #require(decodeItem(bytes(transaction)))
        let notification = try #require(decodeItem(TestDrop.notificationBody(
            TestJWS.notification(signedDate: 1_005, signedTransactionInfo: transaction))))
        #expect(bare.key == notification.key)
        #expect(bare.version < notification.version)
        #expect(notification.version.description == "1000.1005")
    }

    @Test func aNotificationOrdersBelowANewerTransactionSnapshot() throws {
        let notification = try #require(decodeItem(TestDrop.notificationBody(
            TestJWS.notification(signedDate: 9_999, signedTransactionInfo: TestJWS.transaction(signedDate: 1_000)))))
        let newer = try #require(decodeItem(bytes(TestJWS.transaction(signedDate: 1_001))))
        #expect(notification.version < newer.version)
    }

    @Test func twoNotificationsAboutOneSnapshotOrderByTheirOwnSignedDate() throws {
        let transaction = TestJWS.transaction(signedDate: 1_000)
        let first = try #require(decodeItem(TestDrop.notificationBody(
            TestJWS.notification(notificationUUID: "a", signedDate: 1_010, signedTransactionInfo: transaction))))
        let second = try #require(decodeItem(TestDrop.notificationBody(
            TestJWS.notification(notificationUUID: "b", signedDate: 1_020, signedTransactionInfo: transaction))))
        #expect(first.version < second.version)
    }
}
