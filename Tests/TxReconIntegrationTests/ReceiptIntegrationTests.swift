// The built daemon taking StoreKit 1 receipt uploads: Apple's real receipt
// verified with the shipped root and delivered as one item per purchase with
// the app's context labelled, delivered once however often it is uploaded;
// forged and hostile receipts rejected and never sent.
import FoundationEssentials
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct ReceiptIntegrationTests {
    static let real = "sandbox-tpinappreceipt-1.receipt"
    static let purchases = ["2000001092134138", "2000001092148094"]

    func fixture(bundleID: String = "dev.bonzer.weeka.app", receiptRoot: String = ReceiptSamples.shippedRoot) throws -> DaemonFixture {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: """
            [Verification]
            BundleID=\(bundleID)
            Environment=Production Sandbox
            AppAppleID=1234567890
            RootCertificateFile=\(DaemonIntegrationTests.repositoryRoot)/Config/AppleRootCA-G3.cer
            ReceiptRootCertificateFile=\(receiptRoot)
            """)
        return fixture
    }

    @Test func aStoreKit1UploadIsDeliveredAsOneItemPerPurchaseWithItsContextLabelled() async throws {
        let fixture = try fixture()
        try await fixture.start()
        let upload = JSONValue.object([
            ("receipt", .string(ReceiptSamples.base64(Self.real))), ("orderID", .string("A-17")),
            ("productId", .string("dev.bonzer.weeka.app.subscription.pro.annual")),
            ("applicationUsername", .string("order-17")),
        ]).serializedString
        try fixture.drop(upload)
        #expect(await fixture.eventually { fixture.doneItems().sorted() == Self.purchases }, "\(fixture.names("rejected"))")
        #expect(fixture.server.requests.count == 2)
        for request in fixture.server.requests {
            let body = try JSONValue.parse(request.body)
            #expect(body["kind"] == .string("appstore.receipt"))
            #expect(body["environment"] == .string("Sandbox") && body["bundleId"] == .string("dev.bonzer.weeka.app"))
            #expect(body["receipt"] == .string(ReceiptSamples.base64(Self.real)))
            #expect(body["unverified"] == .object([
                ("orderID", .string("A-17")), ("productId", .string("dev.bonzer.weeka.app.subscription.pro.annual")),
                ("applicationUsername", .string("order-17")),
            ]))
            #expect(body["txreconReceiptEntry"] == nil, "the split's own member stays out of the body")
        }

        // The app uploads its receipt again after its next purchase: what
        // was delivered is superseded, not delivered again.
        try fixture.drop(upload)
        #expect(await fixture.eventually { fixture.names("done").filter { $0.contains(".superseded-") }.count == 2 })
        #expect(fixture.server.requests.count == 2)
        #expect(fixture.names("new").isEmpty && fixture.names("rejected").isEmpty)
    }

    @Test func aForgedOrForeignReceiptIsRejectedAndNeverSent() async throws {
        let fixture = try fixture()
        try await fixture.start()
        var altered = try ReceiptSamples.der(Self.real)
        let at = try #require(altered.firstRange(of: Array("2000001092148094".utf8))).lowerBound
        altered[at + 15] = UInt8(ascii: "5")
        try fixture.drop(String(decoding: TestReceipt.upload(altered), as: UTF8.self), name: "altered")
        try fixture.drop(String(decoding: TestReceipt.upload(TestReceipt.sign(TestReceipt.payload(
            bundleId: "dev.bonzer.weeka.app", purchases: [TestReceipt.Purchase(transactionId: "1000000000000001")]))),
            as: UTF8.self), name: "test-pki")
        try fixture.drop(ReceiptSamples.base64("xcode-tpinappreceipt-1.receipt"), name: "xcode")
        try fixture.drop(String(decoding: Array(TestReceipt.upload(try ReceiptSamples.der(Self.real)).prefix(600)),
                                as: UTF8.self), name: "truncated")
        #expect(await fixture.eventually { fixture.names("rejected").count == 8 }, "\(fixture.names("rejected"))")
        #expect(fixture.rejectionCode("altered") == "invalid-receipt-signature")
        #expect(fixture.rejectionCode("test-pki") == "receipt-untrusted-chain")
        #expect(fixture.rejectionCode("xcode") == "receipt-untrusted-chain")
        #expect(fixture.rejectionCode("truncated") == "not-json")
        #expect(fixture.server.requests.isEmpty)
        #expect(fixture.names("new").isEmpty, "nothing was split out of a forged receipt")
    }
}
