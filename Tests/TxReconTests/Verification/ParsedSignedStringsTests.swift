import Testing
import TxReconTestSupport
@testable import TxRecon

/// The decoder hands its JWS parses to the verifier: each is found only
/// under its item's name and for the exact text it came from.
@Suite struct ParsedSignedStringsTests {
    static func decode(_ bytes: [UInt8]) throws -> (Item, ParsedSignedStrings) {
        var parsed = ParsedSignedStrings()
        guard case let .item(item) = try InputDecoder().decode(bytes, parsed: &parsed) else {
            throw Rejection("test", "expected an item")
        }
        return (item, parsed)
    }

    @Test func everySignedStringOfATransactionUploadIsRecordedUnderItsName() throws {
        let (item, parsed) = try Self.decode(TestDrop.transactionUpload(TestJWS.transaction(),
                                                                       renewal: TestJWS.renewalInfo()))
        #expect(item.signedStrings.map(\.name) == ["signedTransactionInfo", "signedRenewalInfo"])
        for (name, text) in item.signedStrings {
            let jws = try #require(parsed.jws(named: name, text: text), "no parse for \(name)")
            #expect(jws.signingInput == Array(text.utf8.prefix(jws.signingInput.count)))
        }
        let transaction = try #require(parsed.jws(named: "signedTransactionInfo", text: item.signedStrings[0].value))
        #expect(transaction.payload["transactionId"] == .string("2000000123456789"))
        let renewal = try #require(parsed.jws(named: "signedRenewalInfo", text: item.signedStrings[1].value))
        #expect(renewal.payload["autoRenewStatus"] == .integer(1))
    }

    @Test func aNotificationRecordsItsOuterAndNestedStrings() throws {
        let notification = TestJWS.notification(signedTransactionInfo: TestJWS.transaction(),
                                                signedRenewalInfo: TestJWS.renewalInfo())
        for bytes in [TestDrop.notificationBody(notification), Array(notification.utf8)] {
            let (item, parsed) = try Self.decode(bytes)
            #expect(item.signedStrings.map(\.name) == ["signedPayload", "signedTransactionInfo", "signedRenewalInfo"])
            for (name, text) in item.signedStrings {
                #expect(parsed.jws(named: name, text: text) != nil, "no parse for \(name)")
            }
        }
    }

    @Test func aParseIsFoundOnlyForTheTextItCameFrom() throws {
        let (item, parsed) = try Self.decode(Array(TestJWS.transaction().utf8))
        let text = item.signedStrings[0].value
        #expect(parsed.jws(named: "signedTransactionInfo", text: text) != nil)
        #expect(parsed.jws(named: "signedTransactionInfo", text: TestJWS.transaction(transactionId: "2000000000000001")) == nil)
        #expect(parsed.jws(named: "signedRenewalInfo", text: text) == nil)
    }

    @Test func aParseOfOtherBytesNeverVouchesForAnItemsSignedString() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        let genuine = SignedDataVerifierTests.transaction()
        let (_, parsed) = try Self.decode(Array(genuine.utf8))
        // The same transaction with its payload changed after signing.
        let other = TestJWS.transactionPayload(transactionId: "2000000999999999")
        let forged = SignedDataVerifierTests.replacing(segment: 1, of: genuine, with: TestJWS.base64URL(other.serialized))
        let (forgedItem, _) = try Self.decode(Array(forged.utf8))
        let rejection = #expect(throws: Rejection.self) { try verifier.verify(forgedItem, parsed: parsed) }
        #expect(rejection?.code == "invalid-signature")
    }
}
