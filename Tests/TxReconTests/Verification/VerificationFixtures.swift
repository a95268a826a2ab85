// Policies, verifiers and the intake verdict shared by the verification
// tests (they need internal types, so they live in this target rather than
// in TxReconTestSupport).
import Testing
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
        try testPolicy(bundleID: bundleID, appAppleID: appAppleID, environments: [environment])
    }

    static func testPolicy(bundleID: String = "com.example.app", appAppleID: Int64? = nil,
                           environments: [SignedDataEnvironment]) throws -> SignedDataPolicy {
        SignedDataPolicy(roots: environments.contains(where: \.checksSignatures) ? try testRoots() : [],
                         bundleID: bundleID, appAppleID: appAppleID, environments: environments)
    }
}

/// What intake makes of one file: decoded (envelopes refused), then verified
/// on the decoder's parses. nil when it would be queued; the rejection
/// otherwise. Records an issue unless the verifier, parsing every JWS itself,
/// comes to the same verdict: the parse handed over must change nothing.
func intakeVerdict(_ bytes: [UInt8], _ verifier: SignedDataVerifier,
                   sourceLocation: SourceLocation = #_sourceLocation) -> Rejection? {
    let decoder = InputDecoder(acceptEnvelopes: false)
    let verdict: Rejection?
    do {
        _ = try decoder.decode(bytes, verifyingWith: verifier)
        verdict = nil
    } catch {
        verdict = error
    }
    let ownParse: Rejection?
    do {
        if case let .item(item) = try decoder.decode(bytes) { try verifier.verify(item) }
        ownParse = nil
    } catch {
        ownParse = error
    }
    #expect(verdict == ownParse, "verdict on the decoder's parses differs from the verifier's own",
            sourceLocation: sourceLocation)
    return verdict
}

/// The verdict on a compact JWS dropped as it is (format 1).
func intakeVerdict(_ compact: String, _ verifier: SignedDataVerifier,
                   sourceLocation: SourceLocation = #_sourceLocation) -> Rejection? {
    intakeVerdict(Array(compact.utf8), verifier, sourceLocation: sourceLocation)
}
