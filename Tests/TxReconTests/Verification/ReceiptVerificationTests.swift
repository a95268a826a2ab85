// The real StoreKit 1 receipts against the shipped receipt root (Apple Inc.
// Root Certificate), each at its own creation date: every signing
// certificate in them has expired by now. Altered and foreign receipts are
// refused with their codes.
import FoundationEssentials
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptVerificationTests {
    static let appleReceipts = ReceiptSamples.names.filter { !$0.hasPrefix("xcode-") }
    static let xcodeReceipts = ReceiptSamples.names.filter { $0.hasPrefix("xcode-") }

    static func receiptRoots() throws -> [RootCertificate] {
        try RootCertificate.read(ReceiptSamples.shippedRoot)
    }

    static func verifier(bundleID: String, environments: [SignedDataEnvironment],
                         receiptRoots: [RootCertificate]? = nil) throws -> SignedDataVerifier {
        let checks = environments.contains(where: \.checksSignatures)
        return SignedDataVerifier(policy: SignedDataPolicy(
            roots: checks ? try VerificationFixtures.appleRoots() : [], bundleID: bundleID, appAppleID: nil,
            environments: environments, receiptRoots: checks ? try receiptRoots ?? Self.receiptRoots() : []))
    }

    /// Decodes and verifies `text` as intake does; the rejection, or nil.
    static func verdict(_ text: String, _ verifier: SignedDataVerifier) -> Rejection? {
        do {
            _ = try InputDecoder().decode(Array(text.utf8), verifyingWith: verifier)
            return nil
        } catch {
            return error
        }
    }

    static func bundle(_ name: String) throws -> String {
        try #require(try ReceiptSamples.expected(name)["bundle_id_2"]?.stringValue)
    }

    static func parsed(_ name: String) throws -> ParsedReceipt {
        let der = try ReceiptSamples.der(name)
        return ParsedReceipt(text: ReceiptSamples.base64(name), der: der, receipt: try AppReceipt(der: der))
    }

    @Test(arguments: appleReceipts)
    func everyRealReceiptVerifiesWithTheShippedRootAtItsCreationDate(name: String) throws {
        let verifier = try Self.verifier(bundleID: try Self.bundle(name), environments: [.production, .sandbox])
        try verifier.verify(try Self.parsed(name))
    }

    @Test func theSHA1SignedReceiptsVerifyWithOpenSSLsDefaults() throws {
        // Signed with SHA-1 until 2023: raising the authentication level would refuse them.
        for name in ["sandbox-tpinappreceipt-2.receipt", "sandbox-appreceiptvalidator-1.receipt",
                     "sandbox-appreceiptvalidator-2.receipt", "sandbox-revenuecat-1.receipt"] {
            #expect(try ReceiptSamples.expected(name)["digest"]?.stringValue == "sha1")
            let verifier = try Self.verifier(bundleID: try Self.bundle(name), environments: [.sandbox])
            #expect(throws: Never.self, "\(name)") { try verifier.verify(try Self.parsed(name)) }
            #expect(Self.verdict(ReceiptSamples.base64(name), verifier) == nil, "\(name), decoded as intake does")
        }
    }

    @Test func aChangedPayloadByteBreaksTheSignature() throws {
        let name = "sandbox-tpinappreceipt-1.receipt"
        var der = try ReceiptSamples.der(name)
        let receipt = try AppReceipt(der: der)
        let bundle = Array(try Self.bundle(name).utf8)
        let at = try #require(der.firstRange(of: bundle)).lowerBound
        der[at] = UInt8(ascii: "x")
        #expect(try AppReceipt(der: der).payload != receipt.payload)
        let verifier = try Self.verifier(bundleID: "x" + String(try Self.bundle(name).dropFirst()), environments: [.sandbox])
        #expect(Self.verdict(Data(der).base64EncodedString(), verifier)?.code == "invalid-receipt-signature")
    }

    @Test func anotherAppsOrAnotherEnvironmentsReceiptIsRefused() throws {
        let name = "sandbox-tpinappreceipt-1.receipt"
        let other = try Self.verifier(bundleID: "com.other", environments: [.sandbox])
        #expect(Self.verdict(ReceiptSamples.base64(name), other)?.code == "wrong-bundle-id")
        let production = try Self.verifier(bundleID: try Self.bundle(name), environments: [.production])
        let rejection = Self.verdict(ReceiptSamples.base64(name), production)
        #expect(rejection?.code == "wrong-environment")
        #expect(rejection?.detail.hasPrefix("Sandbox (want Production) in the receipt") == true)
    }

    @Test func aReceiptChainedOnlyToTheJWSRootIsUntrusted() throws {
        let name = "sandbox-tpinappreceipt-1.receipt"
        let verifier = try Self.verifier(bundleID: try Self.bundle(name), environments: [.sandbox],
                                         receiptRoots: try VerificationFixtures.appleRoots())
        let rejection = Self.verdict(ReceiptSamples.base64(name), verifier)
        #expect(rejection?.code == "receipt-untrusted-chain")
        #expect(rejection?.detail.contains("at the receipt's creation date 2025-12-26T18:39:47Z") == true)
    }

    @Test(arguments: xcodeReceipts)
    func xcodeReceiptsPassOnlyUnderEnvironmentXcode(name: String) throws {
        let bundle = try Self.bundle(name)
        let xcode = try Self.verifier(bundleID: bundle, environments: [.xcode])
        try xcode.verify(try Self.parsed(name))
        let sandbox = try Self.verifier(bundleID: bundle, environments: [.sandbox])
        #expect { try sandbox.verify(try Self.parsed(name)) } throws: { ($0 as? Rejection)?.code == "receipt-untrusted-chain" }
    }

    @Test func withoutTheReceiptRootInstalledReceiptsAreRefusedWithWhatToDo() throws {
        let name = "sandbox-tpinappreceipt-1.receipt"
        let verifier = SignedDataVerifier(policy: SignedDataPolicy(
            roots: try VerificationFixtures.appleRoots(), bundleID: try Self.bundle(name), appAppleID: nil,
            environments: [.sandbox], receiptRootsMissing: "not installed; set ReceiptRootCertificateFile="))
        let rejection = Self.verdict(ReceiptSamples.base64(name), verifier)
        #expect(rejection == Rejection("receipt-untrusted-chain", "not installed; set ReceiptRootCertificateFile="))
    }
}
