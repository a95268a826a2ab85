// Policies, verifiers and the intake verdict shared by the verification
// tests (they need internal types, so they live in this target rather than
// in TxReconTestSupport).
import TxReconTestSupport
@testable import TxRecon

enum VerificationFixtures {
    /// The test PKI's root alone.
    static func testRoots() throws -> [RootCertificate] {
        try RootCertificate.read(TestPKI.path("root"))
    }

    /// Apple Root CA - G3 alone.
    static func appleRoots() throws -> [RootCertificate] {
        try RootCertificate.read(AppStoreSamples.directory + "/AppleRootCA-G3.cer")
    }

    /// A policy for the test PKI's data: TestJWS's bundle id and environment.
    static func testPolicy(bundleID: String = "com.example.app", appAppleID: Int64? = nil,
                           environment: SignedDataEnvironment = .sandbox) throws -> SignedDataPolicy {
        SignedDataPolicy(roots: environment.checksSignatures ? try testRoots() : [], bundleID: bundleID,
                         appAppleID: appAppleID, environment: environment)
    }
}

/// What intake makes of one file: decoded (envelopes refused), then verified.
/// nil when it would be queued; the rejection otherwise.
func intakeVerdict(_ bytes: [UInt8], _ verifier: SignedDataVerifier) -> Rejection? {
    do {
        if case let .item(item) = try InputDecoder(acceptEnvelopes: false).decode(bytes) { try verifier.verify(item) }
        return nil
    } catch {
        return error
    }
}

/// The verdict on a compact JWS dropped as it is (format 1).
func intakeVerdict(_ compact: String, _ verifier: SignedDataVerifier) -> Rejection? {
    intakeVerdict(Array(compact.utf8), verifier)
}
