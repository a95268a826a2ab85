// Format 6, the StoreKit 1 receipt upload, decoded and verified as intake
// does: receipts signed by the test PKI shaped like Apple's receipt signers,
// genuine and forged every way one can be.
import FoundationEssentials
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptUploadTests {
    static func verifier(environments: [SignedDataEnvironment] = [.production, .sandbox]) throws -> SignedDataVerifier {
        SignedDataVerifier(policy: SignedDataPolicy(
            roots: try VerificationFixtures.testRoots(), bundleID: "com.example.app", appAppleID: nil,
            environments: environments, receiptRoots: try RootCertificate.read(TestReceipt.path("root"))))
    }

    /// Decodes and verifies as intake does.
    static func examine(_ bytes: [UInt8], _ verifier: SignedDataVerifier? = nil) throws(Rejection) -> DecodedInput {
        try InputDecoder().decode(bytes, verifyingWith: verifier)
    }

    static func rejection(_ bytes: [UInt8], _ verifier: SignedDataVerifier) -> Rejection? {
        do {
            _ = try examine(bytes, verifier)
            return nil
        } catch {
            return error
        }
    }

    static let two = [TestReceipt.Purchase(transactionId: "1000000000000001"),
                      TestReceipt.Purchase(transactionId: "1000000000000002", purchaseDate: "2025-05-02T10:00:00Z")]

    @Test func anUploadOfTwoPurchasesIsSplitIntoOnePartEachWithItsContext() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let upload = TestReceipt.upload(receipt, context: [("orderID", .string("A-17")),
                                                           ("applicationUsername", .string("order-17"))])
        guard case let .receipt(split) = try Self.examine(upload, try Self.verifier()) else {
            Issue.record("not split")
            return
        }
        let parts = split.parts
        #expect(parts.count == 2)
        #expect(split.size == parts.reduce(0) { $0 + $1.utf8.count }, "counted without building them")
        var keys: [String] = []
        for part in parts {
            guard case let .item(item) = try Self.examine(Array(part.utf8), try Self.verifier()) else {
                Issue.record("a part is not one item")
                continue
            }
            keys.append(item.key.rawValue)
            #expect(item.kind == .receipt)
            #expect(item.context == .object([("orderID", .string("A-17")), ("applicationUsername", .string("order-17"))]))
            #expect(item.fields.environment == "Sandbox" && item.fields.bundleId == "com.example.app")
            #expect(item.fields.productId == "com.example.app.premium")
            #expect(item.signedStrings.map(\.name) == ["receipt"])
            let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
            #expect(body["kind"] == .string("appstore.receipt"))
            #expect(body["receipt"] == .string(Data(receipt).base64EncodedString()), "the receipt as uploaded")
            #expect(body["purchaseDate"]?.int64Value == item.version.primary)
            #expect(body["unverified"] == item.context)
        }
        #expect(keys == ["1000000000000001", "1000000000000002"])
    }

    @Test func anUploadOfOnePurchaseIsThatItemAndSoIsABareBase64File() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[0]]))
        for bytes in [TestReceipt.upload(receipt), Array(Data(receipt).base64EncodedString(options: .lineLength76Characters).utf8)] {
            guard case let .item(item) = try Self.examine(bytes, try Self.verifier()) else {
                Issue.record("not one item")
                continue
            }
            #expect(item.key.rawValue == "1000000000000001")
            #expect(item.version == ItemVersion(primary: ReceiptDate.milliseconds("2025-05-01T10:00:00Z")!))
        }
    }

    @Test func aRevokedEntryIsNewerThanThePurchaseAndTheSameInEveryUpload() throws {
        let purchased = TestReceipt.Purchase(transactionId: "1000000000000001")
        var revoked = purchased
        revoked.cancellationDate = "2025-05-20T08:00:00Z"
        func version(_ purchase: TestReceipt.Purchase, created: String) throws -> ItemVersion? {
            let receipt = TestReceipt.sign(TestReceipt.payload(creationDate: created, purchases: [purchase]))
            guard case let .item(item) = try Self.examine(TestReceipt.upload(receipt)) else { return nil }
            return item.version
        }
        let before = try #require(try version(purchased, created: "2025-05-10T00:00:00Z"))
        let after = try #require(try version(revoked, created: "2025-05-21T00:00:00Z"))
        #expect(after > before)
        #expect(after == ItemVersion(primary: ReceiptDate.milliseconds("2025-05-20T08:00:00Z")!, revoked: true))
        #expect(try version(purchased, created: "2025-06-01T00:00:00Z") == before,
                "the creation date, which changes at every upload, is not the version")
    }

    @Test func aForgedReceiptIsRefusedBeforeItIsSplit() throws {
        let verifier = try Self.verifier()
        var altered = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let at = try #require(altered.firstRange(of: Array("1000000000000002".utf8))).lowerBound
        altered[at + 15] = UInt8(ascii: "9")
        #expect(Self.rejection(TestReceipt.upload(altered), verifier)?.code == "invalid-receipt-signature")

        let payload = TestReceipt.payload(purchases: Self.two)
        for (chain, code) in [
            (["leaf-under-other-root", "other-intermediate", "other-root"], "receipt-untrusted-chain"),
            (["leaf-under-intermediate-expired", "intermediate-expired", "root"], "receipt-untrusted-chain"),
            (["leaf", "root"], "receipt-untrusted-chain"),
            (["leaf-no-oid", "intermediate", "root"], "receipt-missing-oid"),
            (["leaf-under-intermediate-no-oid", "intermediate-no-oid", "root"], "receipt-missing-oid"),
        ] {
            let rejection = Self.rejection(TestReceipt.upload(TestReceipt.sign(payload, chain: chain)), verifier)
            #expect(rejection?.code == code, "\(chain): \(String(describing: rejection))")
        }
        #expect(Self.rejection(TestReceipt.upload(TestReceipt.sign(payload)), verifier) == nil, "the genuine one passes")
    }

    /// 100 purchases with product ids of 7,000 bytes: a receipt of about
    /// 700 KB whose parts, each repeating the whole upload, would take
    /// about 94 MB, more than a split may.
    static func oversizedSplit() -> [UInt8] {
        TestReceipt.sign(TestReceipt.payload(purchases: (0..<100).map { index in
            var purchase = TestReceipt.Purchase(transactionId: String(3_000_000_000_000_000 + index))
            purchase.productId = String(repeating: "p", count: 7_000)
            return purchase
        }))
    }

    @Test func aForgedReceiptIsRefusedAsForgedBeforeItsPartsAreCounted() throws {
        var forged = Self.oversizedSplit()
        guard let at = forged.firstRange(of: Array(String(repeating: "p", count: 16).utf8))?.lowerBound else {
            Issue.record("no product id in the receipt")
            return
        }
        forged[at] = UInt8(ascii: "q")
        #expect(Self.rejection(TestReceipt.upload(forged), try Self.verifier())?.code == "invalid-receipt-signature")
    }

    @Test func aGenuineReceiptWhosePartsWouldTakeTooMuchIsRefusedSayingSo() throws {
        let rejection = Self.rejection(TestReceipt.upload(Self.oversizedSplit()), try Self.verifier())
        #expect(rejection?.code == "too-large")
        #expect(rejection?.detail.contains("100 in-app purchases") == true, "\(String(describing: rejection))")
    }

    @Test func aSignerKnownFromOneReceiptIsCheckedAgainOnEveryNextOne() throws {
        // One verifier: the first receipt makes its signer known, and the
        // ones after it take the short way (one RSA check); every forgery
        // must still fail there.
        let verifier = try Self.verifier()
        let genuine = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[0]]))
        #expect(Self.rejection(TestReceipt.upload(genuine), verifier) == nil)
        #expect(Self.rejection(TestReceipt.upload(genuine), verifier) == nil, "the signer known, it passes again")
        var altered = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[1]]))
        let at = try #require(altered.firstRange(of: Array("1000000000000002".utf8))).lowerBound
        altered[at + 15] = UInt8(ascii: "7")
        #expect(Self.rejection(TestReceipt.upload(altered), verifier)?.code == "invalid-receipt-signature")
        let late = TestReceipt.sign(TestReceipt.payload(creationDate: "2026-06-01T00:00:00Z", purchases: [Self.two[1]]))
        #expect(Self.rejection(TestReceipt.upload(late), verifier)?.code == "receipt-untrusted-chain",
                "outside the known signer's window the chain is validated again")
        let other = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[1]]),
                                     chain: ["leaf-under-other-root", "other-intermediate", "other-root"])
        #expect(Self.rejection(TestReceipt.upload(other), verifier)?.code == "receipt-untrusted-chain")
        for name in ["sandbox-tpinappreceipt-2.receipt", "sandbox-revenuecat-1.receipt"] {
            let real = SignedDataVerifier(policy: SignedDataPolicy(
                roots: try VerificationFixtures.appleRoots(), bundleID: try ReceiptVerificationTests.bundle(name),
                appAppleID: nil, environments: [.sandbox], receiptRoots: try ReceiptVerificationTests.receiptRoots()))
            for _ in 0..<2 { try real.verify(try ReceiptVerificationTests.parsed(name)) }
        }
    }

    @Test func aReceiptCreatedOutsideItsSignersValidityIsUntrusted() throws {
        let late = TestReceipt.payload(creationDate: "2026-06-01T00:00:00Z", purchases: Self.two)
        let rejection = Self.rejection(TestReceipt.upload(TestReceipt.sign(late)), try Self.verifier())
        #expect(rejection?.code == "receipt-untrusted-chain")
        #expect(rejection?.detail.contains("2026-06-01T00:00:00Z") == true)
    }

    @Test func anotherAppsReceiptOrAnotherEnvironmentsIsRefused() throws {
        let other = TestReceipt.sign(TestReceipt.payload(bundleId: "com.other", purchases: Self.two))
        #expect(Self.rejection(TestReceipt.upload(other), try Self.verifier())?.code == "wrong-bundle-id")
        let production = TestReceipt.sign(TestReceipt.payload(receiptType: "Production", purchases: Self.two))
        #expect(Self.rejection(TestReceipt.upload(production), try Self.verifier(environments: [.sandbox]))?.code
                == "wrong-environment")
        let odd = TestReceipt.sign(TestReceipt.payload(receiptType: "Elsewhere", purchases: Self.two))
        #expect(Self.rejection(TestReceipt.upload(odd), try Self.verifier())?.code == "wrong-environment")
    }

    @Test func bytesThatAreNotAReceiptAreRefusedWithTheirCodes() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let verifier = try Self.verifier()
        for (bytes, code) in [
            (TestReceipt.upload(Array(receipt.prefix(receipt.count - 10))), "malformed-receipt"),
            (Array(#"{"receipt":"not base64!"}"#.utf8), "malformed-receipt"),
            (Array(#"{"receipt":7}"#.utf8), "invalid-field"),
            (TestReceipt.upload(TestReceipt.sign(TestReceipt.payload(purchases: []))), "empty-receipt"),
            (Array(JSONValue.object([("receipt", .string(Data(receipt).base64EncodedString())),
                                     ("txreconReceiptEntry", .string("3"))]).serialized), "invalid-field"),
        ] as [([UInt8], String)] {
            #expect(Self.rejection(bytes, verifier)?.code == code, "\(String(decoding: bytes.prefix(40), as: UTF8.self))")
        }
    }

    @Test func hugeCountsAndDeepNestingInThePayloadAreRefused() throws {
        let verifier = try Self.verifier()
        let many = (0...AppReceipt.maximumPurchases).map { TestReceipt.Purchase(transactionId: String(2_000_000 + $0)) }
        let crowded = Self.rejection(TestReceipt.upload(TestReceipt.sign(TestReceipt.payload(purchases: many))), verifier)
        #expect(crowded?.code == "malformed-receipt")
        #expect(crowded?.detail.contains("more than 4096 in-app purchases") == true)
        // An in-app value that is a set of sets 1,000 deep.
        var nested = TestReceipt.der(0x31, [])
        for _ in 0..<1000 { nested = TestReceipt.der(0x31, nested) }
        let deep = TestReceipt.der(0x31, TestReceipt.attribute(17, nested))
        let rejection = Self.rejection(TestReceipt.upload(TestReceipt.sign(deep)), verifier)
        #expect(rejection?.code == "malformed-receipt", "\(String(describing: rejection))")
    }
}
