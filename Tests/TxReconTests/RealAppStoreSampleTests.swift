import FoundationEssentials
import Testing
import TxReconTestSupport
@testable import TxRecon

/// The real Apple-signed Sandbox samples (Fixtures/appstore/real, provenance
/// in PROVENANCE.json) decode with the key and version they should have.
@Suite struct RealAppStoreSampleTests {
    /// Key and version of every transaction and notification sample, by the
    /// file name's hash suffix, worked out independently of txrecon from the
    /// decoded payloads.
    static let expected: [String: (key: String, version: String)] = [
        "67237f4b9370": ("2000000847061981", "1739161772561"),
        "580592e20572": ("2000001032604840", "1760591941117.1760591941117"),
        "c4649c88a69c": ("2000001027701928", "1759727838450.1759727838450"),
        "d7284970edfc": ("2000001027701928", "1759727799810.1759727799810"),
        "bf052ec6ffa0": ("2000001027701928", "1759727866231.1759727866231"),
        "4d51fec0d912": ("2000001025686313", "1759388855473.1759388855473"),
        "7c70331a1836": ("2000001027701928", "1759727821952.1759727821952"),
        "aa2531d010ca": ("2000001027701928", "1759727876877.1759727876877"),
        "6d8ed238a6d6": ("2000001024998954", "1759302518835.1759302518835"),
        "e9b2a0756e5f": ("2000001025012675", "1759304012269.1759304012269"),
        "4e659d0d6ba0": ("2000001025686313", "1759389041604.1759389041604"),
        "a16dc7aeffb0": ("2000001027701928", "1759727985799.1759727985799"),
        "663e2eaa9570": ("2000001032604840", "1760592122788r.1760592122788"),
        "4c41441cbabe": ("2000001025686313", "1759388776941.1759388776941"),
        "10264c56e2cb": ("2000001027701898", "1759727785445.1759727785445"),
        "42bd31f87c85": ("2000001035288486", "1760591792087.1760591792087"),
        "a38d51466910": ("592751ef-c1b8-47fc-929e-d62dee66df4c", "1757035472686"),
        "2e2da401ed58": ("2000001024998954", "1759302518835"),
        "dec8857f37a9": ("2000001025012675", "1759304012269"),
        "07d3c1609da5": ("2000001025686313", "1759389041604"),
        "475a52f19d83": ("2000001025686313", "1759388855473"),
        "f0f1f0bada4b": ("2000001025686313", "1759388776941"),
        "15972857ed01": ("2000001027701928", "1759727838450"),
        "1e2f79c84d0f": ("2000001027701928", "1759727821952"),
        "7dc952f2f766": ("2000001027701928", "1759727985799"),
        "812a6d50c920": ("2000001027701898", "1759727785445"),
        "9a3715fd0ed4": ("2000001027701928", "1759727866231"),
        "9eb405f58d75": ("2000001027701928", "1759727799810"),
        "c3f37c974073": ("2000001027701928", "1759727876877"),
        "38359170a7fc": ("2000001032604840", "1760591941117"),
        "fba03562bf71": ("2000001035288486", "1760591792087"),
        "ff63a2f1e586": ("2000001032604840", "1760592122788r"),
    ]

    static func hash(of sample: AppStoreSample) -> String {
        String(sample.name.dropLast(".jws".count).split(separator: "_").last ?? "")
    }

    @Test func theFixturesHoldAll48RealSamples() {
        let samples = AppStoreSamples.real()
        #expect(samples.count == 48)
        #expect(samples.filter(\.isTransaction).count == 16)
        #expect(samples.filter(\.isNotification).count == 16)
        #expect(samples.filter(\.isRenewalInfo).count == 16)
    }

    @Test(arguments: AppStoreSamples.real().filter { !$0.isRenewalInfo })
    func everyRealTransactionAndNotificationDecodesWithItsKeyAndVersion(_ sample: AppStoreSample) throws {
        let expected = try #require(Self.expected[Self.hash(of: sample)])
        let item = try #require(decodeItem(sample.bytes))
        #expect(item.key.rawValue == expected.key)
        #expect(item.version.description == expected.version)
        #expect(item.kind == (sample.isNotification ? .notification : .transaction))
        #expect(item.fields.environment == "Sandbox")
        // The signed string is the file minus its trailing newline, byte for byte.
        let text = String(decoding: sample.bytes, as: UTF8.self)
        #expect(item.signedStrings.first?.value == String(text.dropLast(text.hasSuffix("\n") ? 1 : 0)))
    }

    /// The JSON inside a compact JWS's payload segment, decoded with
    /// Foundation's base64 (not txrecon's decoder, which the body uses).
    static func payloadJSON(of compact: String) throws -> [UInt8] {
        var segment = String(compact.split(separator: ".")[1])
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while segment.utf8.count % 4 != 0 { segment += "=" }
        return Array(try #require(Data(base64Encoded: segment)))
    }

    /// The body a backend gets carries, beside each signed string, the
    /// payload Apple signed, byte for byte: every real sample, as a bare
    /// JWS and (notifications) in a notification body, with the test
    /// PKI's verifier out of the way (Apple's chain is checked elsewhere).
    @Test(arguments: AppStoreSamples.real().filter { !$0.isRenewalInfo })
    func everyRealSampleIsDeliveredWithItsDecodedPayloadsEqualToItsSignedStrings(_ sample: AppStoreSample) throws {
        let item = try #require(decodeItem(sample.bytes))
        let bodyBytes = RequestBuilder.body(for: item, attempt: 1, receivedAt: 0)
        let body = try JSONValue.parse(bodyBytes)
        #expect(item.decodedPayloads.count == item.signedStrings.count)
        for (name, text) in item.signedStrings {
            let signed = try Self.payloadJSON(of: text)
            let decodedName = SignedDataKind.decodedName(ofSignedString: name)
            #expect(body[decodedName] == (try JSONValue.parse(signed)), "\(sample.name): \(decodedName)")
            #expect(bodyBytes.firstRange(of: signed) != nil, "\(sample.name): \(decodedName) byte for byte")
            #expect(body[name]?.stringValue == text)
        }
        let expectedNames = sample.isNotification
            ? ["notification", "transaction"] + (item.signedStrings.contains { $0.name == "signedRenewalInfo" }
                ? ["renewalInfo"] : [])
            : ["transaction"]
        #expect(item.decodedPayloads.map(\.name) == (item.signedStrings.count == 1 && sample.isNotification
            ? ["notification"] : expectedNames))
    }

    @Test(arguments: AppStoreSamples.real().filter(\.isRenewalInfo))
    func everyRealRenewalInfoAloneIsUnsupportedContent(_ sample: AppStoreSample) {
        #expect(decodeRejection(sample.bytes)?.code == "unsupported-content")
    }

    @Test func aRealTransactionCarriesItsFields() throws {
        let item = try #require(decodeItem(AppStoreSamples.named(
            "mingos-ruby__signedTransactionInfo_Consumable__sandbox__20250210__67237f4b9370.jws").bytes))
        var expected = ItemFields()
        expected.transactionId = "2000000847061981"
        expected.originalTransactionId = "2000000847061981"
        expected.productId = "gh_super_good_ticket_1"
        expected.bundleId = "com.goodheartapp"
        expected.environment = "Sandbox"
        expected.signedDate = 1_739_161_772_561
        expected.transactionDigest = item.decodedPayloads.first.flatMap { ContentDigest.of(json: $0.json) }
        #expect(expected.transactionDigest != nil)
        #expect(item.fields == expected)
        #expect(item.signedStrings.map(\.name) == ["signedTransactionInfo"])
    }

    @Test func aRealRefundNotificationCarriesTheRevocation() throws {
        let item = try #require(decodeItem(AppStoreSamples.named(
            "sessionpro__notification_REFUND__sandbox__20251016__663e2eaa9570.jws").bytes))
        #expect(item.fields.notificationType == "REFUND")
        #expect(item.fields.notificationUUID == "caeda1df-9950-458d-87a7-93bb009e7391")
        #expect(item.fields.transactionId == "2000001032604840")
        #expect(item.fields.revocationDate == 1_760_591_999_000)
        #expect(item.fields.bundleId == "com.loki-project.loki-messenger")
        #expect(item.signedStrings.map(\.name) == ["signedPayload", "signedTransactionInfo", "signedRenewalInfo"])
    }

    @Test func aRealRefundOrdersAboveThePurchaseItRevokes() throws {
        let purchase = try #require(decodeItem(AppStoreSamples.named(
            "sessionpro__signedTransactionInfo_AutoRenewableSubscription__sandbox__20251016__38359170a7fc.jws").bytes))
        let refund = try #require(decodeItem(AppStoreSamples.named(
            "sessionpro__signedTransactionInfo_AutoRenewableSubscription__sandbox__20251016__ff63a2f1e586.jws").bytes))
        let consumptionRequest = try #require(decodeItem(AppStoreSamples.named(
            "sessionpro__notification_CONSUMPTION_REQUEST__sandbox__20251016__580592e20572.jws").bytes))
        let refundNotification = try #require(decodeItem(AppStoreSamples.named(
            "sessionpro__notification_REFUND__sandbox__20251016__663e2eaa9570.jws").bytes))
        #expect(Set([purchase.key, refund.key, consumptionRequest.key, refundNotification.key]).count == 1)
        #expect(purchase.version < consumptionRequest.version)
        #expect(consumptionRequest.version < refund.version)
        #expect(refund.version < refundNotification.version)
    }

    @Test func aRealTestNotificationIsKeyedByItsUUID() throws {
        let item = try #require(decodeItem(AppStoreSamples.named(
            "sessionpro__notification_TEST__sandbox__20250905__a38d51466910.jws").bytes))
        #expect(item.fields.notificationType == "TEST")
        #expect(item.fields.transactionId == nil)
        #expect(item.signedStrings.map(\.name) == ["signedPayload"])
    }

    @Test func aRealNotificationDecodesTheSameInsideANotificationBody() throws {
        let sample = AppStoreSamples.named("sessionpro__notification_DID_RENEW__sandbox__20251001__6d8ed238a6d6.jws")
        let text = String(decoding: sample.bytes, as: UTF8.self).trimmingSuffixNewline
        #expect(decodeItem(TestDrop.notificationBody(text)) == decodeItem(sample.bytes))
    }

    @Test func aRealTransactionAndRenewalInfoDecodeAsAnUpload() throws {
        let transaction = AppStoreSamples.named(
            "sessionpro__signedTransactionInfo_AutoRenewableSubscription__sandbox__20251016__38359170a7fc.jws")
        let renewal = AppStoreSamples.named("sessionpro__signedRenewalInfo__sandbox__20251016__246b563216fc.jws")
        let upload = TestDrop.transactionUpload(String(decoding: transaction.bytes, as: UTF8.self).trimmingSuffixNewline,
                                                renewal: String(decoding: renewal.bytes, as: UTF8.self).trimmingSuffixNewline)
        let item = try #require(decodeItem(upload))
        #expect(item.key.rawValue == "2000001032604840")
    }

    @Test func realTransactionsMakeAHistoryPage() throws {
        let transactions = AppStoreSamples.real().filter(\.isTransaction)
            .map { String(decoding: $0.bytes, as: UTF8.self).trimmingSuffixNewline }
        #expect(try InputDecoder().decode(TestDrop.historyPage(transactions)) == .page(signedTransactions: transactions))
    }

    @Test func xcodeStoreKitSamplesDecodeOrAreRefusedByKind() throws {
        for sample in AppStoreSamples.xcode() {
            if sample.isTransaction {
                let item = try #require(decodeItem(sample.bytes))
                #expect(item.key.rawValue == "0")
                #expect(item.version == ItemVersion(primary: 1_697_679_936_056))
                #expect(item.fields.environment == "Xcode")
            } else {
                #expect(decodeRejection(sample.bytes)?.code == "unsupported-content", "\(sample)")
            }
        }
    }
}

extension String {
    var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
