import Testing
@testable import TxRecon

@Suite struct RequestBuilderTests {
    private static let receivedAt: Int64 = 1_690_000_000_123
    private static let signedAt: Int64 = 1_690_000_100

    private func transaction(key: String = "2000000123456789") -> Item {
        var fields = ItemFields()
        fields.transactionId = key
        fields.originalTransactionId = "2000000000000001"
        fields.productId = "com.example.pro"
        fields.bundleId = "com.example.app"
        fields.environment = "Production"
        fields.signedDate = 1_690_000_000_000
        fields.revocationDate = 1_690_000_050_000
        return Item(key: ItemKey(key)!, version: ItemVersion(primary: 1_690_000_000_000, revoked: true),
                    kind: .transaction, fields: fields,
                    signedStrings: [("signedTransactionInfo", "eyJhbGciOiJFUzI1NiJ9.eyJ0In0.c2ln"),
                                    ("signedRenewalInfo", "eyJhbGciOiJFUzI1NiJ9.eyJyIn0.c2ln")])
    }

    private func envelope() throws -> Item {
        Item(key: ItemKey("order-17")!, version: ItemVersion(primary: 3), kind: .envelope,
             payload: try JSONValue.parse(#"{"b":1.50,"a":[true,null]}"#))
    }

    private func build(_ item: Item, secrets: BackendSecrets = BackendSecrets(), attempt: Int = 1,
                       signedAt: Int64 = signedAt) -> DeliveryRequest {
        RequestBuilder(softwareVersion: "1.2.3", secrets: secrets)
            .request(for: item, attempt: attempt, receivedAt: Self.receivedAt, signedAt: signedAt)
    }

    @Test func contractHeadersComeFirstAndInOrder() {
        let request = build(transaction())
        #expect(request.headers.map(\.name) == ["Content-Type", "User-Agent", "Idempotency-Key"])
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.header("User-Agent") == "txrecon/1.2.3")
    }

    @Test func idempotencyKeyIsTheKeyAndTheVersionToken() {
        #expect(build(transaction()).header("Idempotency-Key") == "2000000123456789:1690000000000r")
    }

    @Test func idempotencyKeyEncodesBytesThatCannotStandInAHeader() {
        let item = Item(key: ItemKey("a b%c\r\nd")!, version: ItemVersion(primary: 7), kind: .envelope,
                        payload: .null)
        #expect(build(item).header("Idempotency-Key") == "a%20b%25c%0D%0Ad:7")
    }

    @Test func withoutSecretsThereIsNoAuthorizationAndNoSignature() {
        let request = build(transaction())
        #expect(request.header("Authorization") == nil)
        #expect(request.header("webhook-signature") == nil)
        #expect(request.header("webhook-id") == nil)
    }

    @Test func bearerTokenIsSentAsAuthorization() {
        let request = build(transaction(), secrets: BackendSecrets(bearerToken: "tok-123"))
        #expect(request.header("Authorization") == "Bearer tok-123")
    }

    @Test func tokenAndSigningKeyNeverAppearInTheBody() {
        let secrets = BackendSecrets(bearerToken: "tok-SECRET", webhookSigningKey: Array("key-SECRET".utf8))
        let body = String(decoding: build(transaction(), secrets: secrets).body, as: UTF8.self)
        #expect(!body.contains("SECRET"))
    }

    @Test func signatureVerifiesOverIdTimestampAndTheExactBody() throws {
        let key = Array("whsec-test-key".utf8)
        let request = build(transaction(), secrets: BackendSecrets(webhookSigningKey: key))
        let id = try #require(request.header("webhook-id"))
        let timestamp = try #require(request.header("webhook-timestamp"))
        let signed = Array("\(id).\(timestamp).".utf8) + request.body
        let expected = "v1," + WebhookSigner.base64(WebhookSigner.hmacSHA256(key: key, message: signed))
        #expect(timestamp == "1690000100")
        #expect(request.header("webhook-signature") == expected)
    }

    @Test func webhookIdIsStableAcrossAttemptsWhileTheSignatureIsNew() {
        let secrets = BackendSecrets(webhookSigningKey: Array("k".utf8))
        let first = build(transaction(), secrets: secrets, attempt: 1, signedAt: 1_690_000_100)
        let second = build(transaction(), secrets: secrets, attempt: 2, signedAt: 1_690_000_160)
        #expect(first.header("webhook-id") == "2000000123456789:1690000000000r")
        #expect(first.header("webhook-id") == second.header("webhook-id"))
        #expect(first.header("webhook-timestamp") != second.header("webhook-timestamp"))
        #expect(first.header("webhook-signature") != second.header("webhook-signature"))
    }

    @Test func transactionBodyHasItsMembersInTheDocumentedOrder() throws {
        let body = try JSONValue.parse(build(transaction(), attempt: 3).body)
        #expect(body.objectValue?.map(\.0) == [
            "id", "version", "versionToken", "kind", "attempt", "receivedAt",
            "transactionId", "originalTransactionId", "productId", "bundleId", "environment",
            "signedDate", "revocationDate", "signedTransactionInfo", "signedRenewalInfo",
        ])
    }

    @Test func transactionBodyCarriesTypedValues() throws {
        let body = try JSONValue.parse(build(transaction(), attempt: 3).body)
        #expect(body["id"] == .string("2000000123456789"))
        #expect(body["version"] == .number("1690000000000"))
        #expect(body["versionToken"] == .string("1690000000000r"))
        #expect(body["kind"] == .string("appstore.transaction"))
        #expect(body["attempt"] == .number("3"))
        #expect(body["receivedAt"] == .string("2023-07-22T04:26:40.123Z"))
        #expect(body["revocationDate"] == .number("1690000050000"))
    }

    @Test func signedStringsArePassedVerbatim() throws {
        let body = try JSONValue.parse(build(transaction()).body)
        #expect(body["signedTransactionInfo"] == .string("eyJhbGciOiJFUzI1NiJ9.eyJ0In0.c2ln"))
        #expect(body["signedRenewalInfo"] == .string("eyJhbGciOiJFUzI1NiJ9.eyJyIn0.c2ln"))
    }

    @Test func unsetFieldsAreLeftOut() throws {
        let body = try JSONValue.parse(build(transaction()).body)
        for name in ["appAccountToken", "notificationType", "subtype", "notificationUUID", "payload"] {
            #expect(body[name] == nil, "\(name)")
        }
    }

    @Test func anEnvelopeReadFromAFileIsSentWithThePayloadsBytesAsTheFileHoldsThem() throws {
        let payload = "{ \"b\" : 1.50,\n  \"a\": [\"caf\\u00e9\", null] }"
        let file = #"{"id":"order-17","version":3,"payload":"# + payload + "}"
        guard case let .item(item) = try InputDecoder().decode(Array(file.utf8)) else {
            Issue.record("not one item")
            return
        }
        let body = String(decoding: build(item).body, as: UTF8.self)
        #expect(body == #"{"id":"order-17","version":3,"versionToken":"3","kind":"envelope","attempt":1,"#
            + #""receivedAt":"2023-07-22T04:26:40.123Z","payload":"# + payload + "}")
        #expect(try JSONValue.parse(body)["payload"] == JSONValue.parse(payload))
    }

    @Test func envelopeBodyEndsWithThePayloadAsGiven() throws {
        let body = String(decoding: build(try envelope()).body, as: UTF8.self)
        #expect(body == #"{"id":"order-17","version":3,"versionToken":"3","kind":"envelope","attempt":1,"#
            + #""receivedAt":"2023-07-22T04:26:40.123Z","payload":{"b":1.50,"a":[true,null]}}"#)
    }
}
