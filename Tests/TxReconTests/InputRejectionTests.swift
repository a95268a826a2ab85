import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct InputRejectionTests {
    @Test func anEmptyFileIsRefused() {
        #expect(decodeRejection([])?.code == "empty-file")
    }

    @Test func aWhitespaceOnlyFileIsRefusedAsEmpty() {
        #expect(decodeRejection(bytes(" \n\t\r\n"))?.code == "empty-file")
    }

    @Test func textThatIsNeitherJWSNorJSONIsNotJSON() {
        let rejection = decodeRejection(bytes("hello world\n"))
        #expect(rejection?.code == "not-json")
        #expect(rejection?.detail.contains("neither a compact JWS (format 1") == true)
    }

    @Test func brokenJSONIsNotJSONWithTheParserPosition() {
        let rejection = decodeRejection(bytes(#"{"signedPayload": "abc""#))
        #expect(rejection?.code == "not-json")
        #expect(rejection?.detail.hasPrefix("the file starts like JSON (formats 2 to 5) but is not valid JSON: ") == true)
        #expect(rejection?.detail.contains("at byte 23") == true)
    }

    @Test func duplicateTopLevelKeysAreNotJSON() {
        let rejection = decodeRejection(bytes(#"{"id":"a","id":"b","version":1,"payload":1}"#))
        #expect(rejection?.code == "not-json")
        #expect(rejection?.detail.contains("duplicate key \"id\"") == true)
    }

    @Test func aByteOrderMarkIsNotJSON() {
        let rejection = decodeRejection([0xEF, 0xBB, 0xBF] + TestDrop.transactionUpload(TestJWS.transaction()))
        #expect(rejection?.code == "not-json")
        #expect(rejection?.detail.contains("byte order mark") == true)
    }

    @Test func anObjectOfNoKnownFormatIsUnknownFormat() {
        let rejection = decodeRejection(bytes(#"{"transactionId": "1"}"#))
        #expect(rejection == Rejection("unknown-format", "a JSON object with none of signedPayload, "
            + "signedTransactionInfo, signedTransactions or id/version/payload; see docs/input-formats.md \"Input formats\""))
    }

    @Test func jsonThatIsNotAnObjectIsUnknownFormat() {
        for text in ["[1,2]", "\"eyJ.a.b\"", "42", "null"] {
            let rejection = decodeRejection(bytes(text))
            #expect(rejection?.code == "unknown-format", "\(text)")
            #expect(rejection?.detail.contains("not an object") == true, "\(text)")
        }
    }

    @Test func aJWSWithTwoSegmentsIsMalformedAndSaysWhere() {
        let parts = TestJWS.transaction().split(separator: ".")
        let twoSegments = parts[0] + "." + parts[1]
        #expect(decodeRejection(TestDrop.transactionUpload(String(twoSegments))) == Rejection("malformed-jws",
            "signedTransactionInfo (format 3) has 2 segments, a compact JWS has 3 (header.payload.signature)"))
        #expect(decodeRejection(bytes(String(twoSegments))) == Rejection("malformed-jws",
            "the file, read as a compact JWS (format 1), has 2 segments, a compact JWS has 3 (header.payload.signature)"))
    }

    @Test func leadingWhitespaceBeforeABareJWSIsMalformed() {
        let rejection = decodeRejection(bytes(" " + TestJWS.transaction()))
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.contains("whitespace in its header segment at byte 0") == true)
    }

    @Test func aNestedMalformedJWSNamesItsPathInTheNotification() {
        let signedPayload = TestJWS.notification(signedTransactionInfo: "abc.def")
        let rejection = decodeRejection(TestDrop.notificationBody(signedPayload))
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.hasPrefix("data.signedTransactionInfo of signedPayload (format 2) has 2 segments") == true)
    }

    @Test func aHistoryPageElementThatIsNotAJWSIsMalformedWithItsIndex() {
        let page = TestDrop.historyPage([TestJWS.transaction(), "e30.e30.e30="])
        let rejection = decodeRejection(page)
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.hasPrefix("signedTransactions[1] (format 4) has '=' padding") == true)
    }

    @Test func aPayloadThatIsNotAnObjectIsMalformedPayload() {
        let jws = TestJWS.make(headerJSON: #"{"alg":"ES256"}"#, payloadJSON: "[1]")
        #expect(decodeRejection(TestDrop.transactionUpload(jws)) == Rejection("malformed-payload",
            "signedTransactionInfo (format 3) has a payload that is an array, not a JSON object"))
    }

    @Test func aTransactionWithoutTransactionIdIsMissingField() {
        let jws = TestJWS.make(payload: TestJWS.transactionPayload().removing("transactionId"))
        #expect(decodeRejection(TestDrop.transactionUpload(jws)) == Rejection("missing-field",
            "the transaction in signedTransactionInfo (format 3) has no transactionId"))
    }

    @Test func aTransactionWithoutSignedDateIsMissingField() {
        let jws = TestJWS.make(payload: TestJWS.transactionPayload().removing("signedDate"))
        #expect(decodeRejection(bytes(jws)) == Rejection("missing-field",
            "the transaction in the file (format 1) has no signedDate"))
    }

    @Test func aNotificationWithoutNotificationUUIDIsMissingField() {
        let jws = TestJWS.make(payload: TestJWS.notificationPayload().removing("notificationUUID"))
        #expect(decodeRejection(TestDrop.notificationBody(jws)) == Rejection("missing-field",
            "the notification in signedPayload (format 2) has no notificationUUID"))
    }

    @Test func aBareJWSOfNothingRecognisableIsMissingField() {
        let rejection = decodeRejection(bytes(TestJWS.make(payload: .object([("hello", .string("world"))]))))
        #expect(rejection?.code == "missing-field")
        #expect(rejection?.detail.contains("neither transactionId") == true)
    }

    @Test func anEnvelopeWithoutPayloadIsMissingField() {
        #expect(decodeRejection(bytes(#"{"id":"a","version":1}"#)) == Rejection("missing-field",
            "the envelope (format 5) has no payload"))
    }

    @Test func aNumericTransactionIdIsInvalidField() {
        let jws = TestJWS.make(payload: TestJWS.transactionPayload(extra: [("transactionId", .integer(7))]))
        #expect(decodeRejection(bytes(jws)) == Rejection("invalid-field",
            "transactionId of the transaction in the file (format 1) is 7, expected a string"))
    }

    @Test func aStringSignedDateIsInvalidField() {
        let jws = TestJWS.make(payload: TestJWS.transactionPayload(extra: [("signedDate", .string("1700000000000"))]))
        #expect(decodeRejection(bytes(jws)) == Rejection("invalid-field", "signedDate of the transaction in the file "
            + "(format 1) is a string, expected a non-negative integer number of milliseconds since 1970"))
    }

    @Test func negativeOrExponentDatesAreInvalidField() {
        for number in ["-1", "1e12", "99999999999999999999"] {
            let jws = TestJWS.make(payload: TestJWS.transactionPayload(extra: [("revocationDate", .number(number))]))
            #expect(decodeRejection(bytes(jws))?.code == "invalid-field", "\(number)")
        }
    }

    @Test func anOverlongKeyIsInvalidField() {
        let id = String(repeating: "k", count: ItemKey.maximumLength + 1)
        #expect(decodeRejection(TestDrop.envelope(id: id, version: 1, payload: .null)) == Rejection("invalid-field",
            "id of the envelope (format 5) is 129 bytes long; an item key has 1 to 128 bytes"))
    }

    @Test func anEmptyTransactionIdIsInvalidField() {
        let jws = TestJWS.make(payload: TestJWS.transactionPayload(extra: [("transactionId", .string(""))]))
        #expect(decodeRejection(bytes(jws))?.code == "invalid-field")
    }

    @Test func aNegativeOrFractionalEnvelopeVersionIsInvalidField() {
        for version in ["-1", "1.5", "1e3", "\"3\""] {
            let rejection = decodeRejection(bytes(#"{"id":"a","version":\#(version),"payload":1}"#))
            #expect(rejection?.code == "invalid-field", "\(version)")
            #expect(rejection?.detail.hasPrefix("version of the envelope (format 5) is ") == true, "\(version)")
        }
    }

    @Test func aNonStringSignedPayloadIsInvalidField() {
        #expect(decodeRejection(bytes(#"{"signedPayload": 5}"#)) == Rejection("invalid-field",
            "signedPayload of an App Store Server Notification body (format 2) is 5, expected a string"))
    }

    @Test func aNonStringHistoryElementIsInvalidField() {
        let page = bytes(#"{"signedTransactions":[{"a":1}]}"#)
        #expect(decodeRejection(page) == Rejection("invalid-field", "signedTransactions[0] of a transaction history "
            + "page (format 4) is an object, expected a string (a compact JWS)"))
    }

    @Test func aHistoryPageOfRenewalInfosIsRefused() {
        let rejection = decodeRejection(TestDrop.historyPage([TestJWS.renewalInfo()]))
        #expect(rejection == Rejection("missing-field", "the transaction in signedTransactions[0] (format 4) has no transactionId"))
    }

    @Test func aRenewalInfoOfAnotherSubscriptionIsInvalidField() {
        let upload = TestDrop.transactionUpload(TestJWS.transaction(originalTransactionId: "100"),
                                                renewal: TestJWS.renewalInfo(originalTransactionId: "200"))
        let rejection = decodeRejection(upload)
        #expect(rejection?.code == "invalid-field")
        #expect(rejection?.detail.hasPrefix("signedRenewalInfo (format 3) belongs to originalTransactionId 200, "
            + "but signedTransactionInfo to 100") == true)
    }

    @Test func aTransactionInTheRenewalSlotIsInvalidField() {
        let upload = TestDrop.transactionUpload(TestJWS.transaction(), renewal: TestJWS.transaction())
        #expect(decodeRejection(upload)?.code == "invalid-field")
    }

    @Test func anExtraMemberInANotificationBodyIsUnexpected() {
        let body = bytes(#"{"signedPayload":"\#(TestJWS.notification())","receivedAt":1}"#)
        #expect(decodeRejection(body) == Rejection("unexpected-member", "the member \"receivedAt\" is not part of an App "
            + "Store Server Notification body (format 2), which has only signedPayload; remove it, or wrap the data "
            + "in a generic envelope (format 5)"))
    }

    @Test func anUploadsContextLargerThanFourKiBIsRefusedNotCut() {
        let note = String(repeating: "x", count: InputDecoder.maximumContextSize)
        let rejection = decodeRejection(bytes(#"{"signedTransactionInfo":"\#(TestJWS.transaction())","note":"\#(note)"}"#))
        #expect(rejection?.code == "context-too-large")
        #expect(rejection?.detail.contains("more than 4096") == true)
    }

    /// A number no double holds (Go's float64 refuses it, Python's
    /// int() past 4,300 digits) would make the delivered body unreadable
    /// to the backend and hold the genuine transaction beside it.
    @Test(arguments: ["1e400", "-1e400", String(repeating: "9", count: 400)])
    func anUploadsContextWithANumberNoDoubleHoldsIsRefused(number: String) {
        let rejection = decodeRejection(bytes(#"{"signedTransactionInfo":"\#(TestJWS.transaction())","n":[\#(number)]}"#))
        #expect(rejection?.code == "invalid-field")
        #expect(rejection?.detail.contains("send it as a string") == true, "\(String(describing: rejection))")
        #expect((try? InputDecoder().decode(bytes(#"{"signedTransactionInfo":"\#(TestJWS.transaction())","n":1.5e300}"#)))
                != nil, "a number a double holds is taken")
    }

    @Test func anExtraMemberInAnEnvelopeIsUnexpected() {
        let rejection = decodeRejection(bytes(#"{"id":"a","version":1,"payload":{},"kind":"x"}"#))
        #expect(rejection?.code == "unexpected-member")
        #expect(rejection?.detail.contains("\"kind\" is not part of the envelope (format 5)") == true)
    }

    @Test func extraMembersOfAHistoryPageAreAllowed() throws {
        let page = TestDrop.historyPage([TestJWS.transaction()])
        #expect(try InputDecoder().decode(page) == .page(signedTransactions: [TestJWS.transaction()]))
    }

    @Test func anEmptyHistoryPageIsRefused() {
        #expect(decodeRejection(TestDrop.historyPage([]))?.code == "empty-page")
    }

    @Test func envelopesAreRefusedWhenDisabled() {
        let rejection = decodeRejection(TestDrop.envelope(id: "a", version: 1, payload: .null),
                                        InputDecoder(acceptEnvelopes: false))
        #expect(rejection?.code == "envelopes-disabled")
        #expect(rejection?.detail.contains("AcceptEnvelopes=yes") == true)
    }

    @Test func appStoreFormatsAreUnaffectedByDisablingEnvelopes() {
        #expect(decodeItem(bytes(TestJWS.transaction()), InputDecoder(acceptEnvelopes: false)) != nil)
    }

    @Test func aBareRenewalInfoIsUnsupportedContent() {
        let rejection = decodeRejection(bytes(TestJWS.renewalInfo()))
        #expect(rejection?.code == "unsupported-content")
        #expect(rejection?.detail.contains("together with its transaction") == true)
        #expect(rejection?.detail.contains("(format 3)") == true)
    }

    @Test func aRenewalInfoWithoutItsTransactionIsUnsupportedContent() {
        let body = bytes(#"{"signedRenewalInfo":"\#(TestJWS.renewalInfo())"}"#)
        #expect(decodeRejection(body)?.code == "unsupported-content")
    }

    @Test func everyCodeIsSpelledAsOperatorsMatchIt() {
        #expect(RejectionCode.allCases.map(\.rawValue) == [
            "empty-file", "not-json", "unknown-format", "malformed-jws", "malformed-payload", "missing-field",
            "invalid-field", "unexpected-member", "context-too-large", "empty-page", "malformed-receipt", "empty-receipt", "receipt-not-stored", "envelopes-disabled", "unsupported-content",
            "unsupported-alg", "invalid-x5c", "invalid-certificate", "invalid-chain", "missing-oid", "invalid-signature",
            "wrong-bundle-id", "wrong-app-apple-id", "wrong-environment", "no-app-named",
            "invalid-receipt-signature", "receipt-untrusted-chain", "receipt-missing-oid",
        ])
    }
}
