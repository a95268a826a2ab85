import Testing
import TxReconTestSupport
@testable import TxRecon

/// Every real Apple-signed Sandbox sample (Fixtures/appstore/real) verifies
/// against Apple Root CA - G3 at its own signedDate with its own bundle id,
/// and fails with another bundle id, environment or root.
@Suite struct RealSampleVerificationTests {
    /// The sample's text without its trailing newline.
    static func text(_ sample: AppStoreSample) -> String {
        String(decoding: sample.bytes, as: UTF8.self).trimmingSuffixNewline
    }

    /// The bundle id the sample's payload (or its transaction's) carries.
    static func bundleID(_ sample: AppStoreSample) throws -> String {
        try #require(decodeItem(sample.bytes)?.fields.bundleId)
    }

    /// The verdict on a sample: renewal infos, which intake takes only
    /// beside their transaction, are verified as one signed string.
    static func verdict(_ sample: AppStoreSample, _ verifier: SignedDataVerifier) -> Rejection? {
        sample.isRenewalInfo ? renewalInfoVerdict(text(sample), verifier) : intakeVerdict(sample.bytes, verifier)
    }

    static func renewalInfoVerdict(_ compact: String, _ verifier: SignedDataVerifier) -> Rejection? {
        do {
            try verifier.verify(compact, as: .renewalInfo, subject: "signedRenewalInfo")
            return nil
        } catch {
            return error
        }
    }

    static func verifier(bundleID: String, environment: SignedDataEnvironment = .sandbox,
                         roots: [RootCertificate]) -> SignedDataVerifier {
        SignedDataVerifier(policy: SignedDataPolicy(roots: roots, bundleID: bundleID, appAppleID: nil,
                                                    environments: [environment]))
    }

    static let transactionsAndNotifications = AppStoreSamples.real().filter { !$0.isRenewalInfo }
    static let renewalInfos = AppStoreSamples.real().filter(\.isRenewalInfo)

    @Test(arguments: transactionsAndNotifications)
    func everyRealTransactionAndNotificationVerifies(_ sample: AppStoreSample) throws {
        let verifier = Self.verifier(bundleID: try Self.bundleID(sample), roots: try VerificationFixtures.appleRoots())
        #expect(Self.verdict(sample, verifier) == nil)
    }

    @Test(arguments: renewalInfos)
    func everyRealRenewalInfoVerifies(_ sample: AppStoreSample) throws {
        let verifier = Self.verifier(bundleID: "unused.for.renewal.infos", roots: try VerificationFixtures.appleRoots())
        #expect(Self.verdict(sample, verifier) == nil)
    }

    @Test(arguments: transactionsAndNotifications)
    func everyRealTransactionAndNotificationFailsWithAnotherBundleID(_ sample: AppStoreSample) throws {
        let verifier = Self.verifier(bundleID: "com.example.other", roots: try VerificationFixtures.appleRoots())
        #expect(Self.verdict(sample, verifier)?.code == "wrong-bundle-id")
    }

    @Test(arguments: AppStoreSamples.real())
    func everyRealSampleFailsInProduction(_ sample: AppStoreSample) throws {
        let bundleID = sample.isRenewalInfo ? "unused" : try Self.bundleID(sample)
        let verifier = Self.verifier(bundleID: bundleID, environment: .production,
                                     roots: try VerificationFixtures.appleRoots())
        let code = Self.verdict(sample, verifier)?.code
        // A notification's app is checked before its environment, as Apple does;
        // without AppAppleID= in the policy, environment is what differs.
        #expect(code == "wrong-environment")
    }

    @Test(arguments: AppStoreSamples.real())
    func everyRealSampleFailsUnderAnotherRoot(_ sample: AppStoreSample) throws {
        let bundleID = sample.isRenewalInfo ? "unused" : try Self.bundleID(sample)
        let verifier = Self.verifier(bundleID: bundleID, roots: try VerificationFixtures.testRoots())
        #expect(Self.verdict(sample, verifier)?.code == "invalid-chain")
    }

    @Test func aRealSampleFailsWhenItsSignedDateIsAfterItsLeafExpired() throws {
        // The go-iap renewal info was signed on 2023-05-23; its leaf expired on 2023-09-24.
        let sample = AppStoreSamples.named("goiap__signedRenewalInfo__sandbox__20230523__8a5480611927.jws")
        let parts = Self.text(sample).split(separator: ".").map(String.init)
        let payload = try CompactJWS(compact: Self.text(sample)).payload
            .merging([("signedDate", .integer(1_700_000_000_000))])
        // The signature no longer matches either, but the chain is judged first.
        let moved = parts[0] + "." + TestJWS.base64URL(payload.serialized) + "." + parts[2]
        let verifier = Self.verifier(bundleID: "unused", roots: try VerificationFixtures.appleRoots())
        let rejection = Self.renewalInfoVerdict(moved, verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.hasPrefix("certificate has expired at signedDate 2023-11-14T22:13:20Z") == true)
    }

    @Test(arguments: AppStoreSamples.xcode().filter { $0.isTransaction || $0.isRenewalInfo })
    func xcodeSamplesVerifyUnderEnvironmentXcode(_ sample: AppStoreSample) throws {
        let payload = try CompactJWS(compact: Self.text(sample)).payload
        let verifier = Self.verifier(bundleID: payload["bundleId"]?.stringValue ?? "unused", environment: .xcode,
                                     roots: [])
        #expect(Self.verdict(sample, verifier) == nil)
    }
}
