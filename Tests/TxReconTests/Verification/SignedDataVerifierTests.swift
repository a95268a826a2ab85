import Testing
import TxReconTestSupport
@testable import TxRecon

/// Data signed with the test PKI (Fixtures/testpki): what passes, and one
/// forgery per rejection code.
@Suite struct SignedDataVerifierTests {
    let verifier: SignedDataVerifier

    init() throws {
        verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
    }

    /// A transaction signed like Apple signs one; `chain` names the x5c certificates.
    static func transaction(chain: [String] = TestPKI.validChain, bundleId: String = "com.example.app",
                            environment: String = "Sandbox",
                            signedDate: Int64 = TestPKI.insideLeafValidity) -> String {
        TestPKI.sign(header: TestPKI.header(chain: chain),
                     payload: TestJWS.transactionPayload(bundleId: bundleId, environment: environment,
                                                         signedDate: signedDate))
    }

    /// `jws` with its segment `index` (0 header, 1 payload, 2 signature) replaced.
    static func replacing(segment index: Int, of jws: String, with text: String) -> String {
        var segments = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        segments[index] = text
        return segments.joined(separator: ".")
    }

    @Test func aTransactionSignedByTheTestPKIVerifies() {
        #expect(intakeVerdict(Self.transaction(), verifier) == nil)
    }

    @Test func aNotificationWithANestedTransactionAndRenewalInfoVerifies() {
        let notification = TestPKI.sign(payload: TestJWS.notificationPayload(
            signedTransactionInfo: Self.transaction(),
            signedRenewalInfo: TestPKI.sign(payload: TestJWS.renewalInfoPayload())))
        #expect(intakeVerdict(TestDrop.notificationBody(notification), verifier) == nil)
    }

    // MARK: - Signature

    @Test func aTamperedPayloadIsAnInvalidSignature() {
        let other = TestJWS.transactionPayload(transactionId: "2000000999999999")
        let forged = Self.replacing(segment: 1, of: Self.transaction(),
                                    with: TestJWS.base64URL(other.serialized))
        let rejection = intakeVerdict(forged, verifier)
        #expect(rejection?.code == "invalid-signature")
        #expect(rejection?.detail.contains("signature of signedTransactionInfo does not match") == true)
    }

    @Test func aTamperedSignatureIsAnInvalidSignature() {
        let jws = Self.transaction()
        let input = jws.split(separator: ".").prefix(2).joined(separator: ".")
        var signature = TestPKI.es256(Array(input.utf8))
        signature[40] ^= 0x01
        let forged = Self.replacing(segment: 2, of: jws, with: TestJWS.base64URL(signature))
        #expect(intakeVerdict(forged, verifier)?.code == "invalid-signature")
    }

    @Test func aSignatureOfTheWrongLengthIsAnInvalidSignature() {
        let forged = Self.replacing(segment: 2, of: Self.transaction(), with: TestJWS.base64URL([UInt8](repeating: 1, count: 72)))
        #expect(intakeVerdict(forged, verifier)?.code == "invalid-signature")
    }

    // MARK: - Header

    @Test func algNoneIsUnsupported() {
        let forged = TestPKI.sign(header: TestPKI.header(alg: "none"), payload: TestJWS.transactionPayload())
        let rejection = intakeVerdict(forged, verifier)
        #expect(rejection?.code == "unsupported-alg")
        #expect(rejection?.detail.hasPrefix("none (the alg of signedTransactionInfo)") == true)
    }

    @Test func algHS256IsUnsupported() {
        let forged = TestPKI.sign(header: TestPKI.header(alg: "HS256"), payload: TestJWS.transactionPayload())
        let rejection = intakeVerdict(forged, verifier)
        #expect(rejection?.code == "unsupported-alg")
        #expect(rejection?.detail.hasPrefix("HS256") == true)
    }

    @Test func aHeaderWithoutAlgIsUnsupported() {
        let header = JSONValue.object([("x5c", TestPKI.x5c(TestPKI.validChain))])
        let rejection = intakeVerdict(TestPKI.sign(header: header, payload: TestJWS.transactionPayload()), verifier)
        #expect(rejection?.code == "unsupported-alg")
        #expect(rejection?.detail.hasPrefix("missing") == true)
    }

    @Test func aCriticalHeaderExtensionIsRefused() {
        let header = TestPKI.header().merging([("crit", .array([.string("exp")]))])
        let rejection = intakeVerdict(TestPKI.sign(header: header, payload: TestJWS.transactionPayload()), verifier)
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.contains("crit") == true)
    }

    @Test func twoCertificatesAreAnInvalidX5C() {
        let rejection = intakeVerdict(Self.transaction(chain: ["leaf", "intermediate"]), verifier)
        #expect(rejection?.code == "invalid-x5c")
        #expect(rejection?.detail.hasPrefix("x5c of signedTransactionInfo holds 2 certificates") == true)
    }

    @Test func fourCertificatesAreAnInvalidX5C() {
        let rejection = intakeVerdict(Self.transaction(chain: ["leaf", "intermediate", "root", "root"]), verifier)
        #expect(rejection?.code == "invalid-x5c")
        #expect(rejection?.detail.contains("holds 4 certificates") == true)
    }

    @Test func aMissingX5CIsAnInvalidX5C() {
        let header = JSONValue.object([("alg", .string("ES256"))])
        #expect(intakeVerdict(TestPKI.sign(header: header, payload: TestJWS.transactionPayload()), verifier)?.code
            == "invalid-x5c")
    }

    @Test func anX5CEntryThatIsNotBase64IsAnInvalidCertificate() {
        let header = JSONValue.object([("alg", .string("ES256")), ("x5c", .array([
            .string(TestPKI.certificate("leaf")), .string("not base64!"), .string(TestPKI.certificate("root")),
        ]))])
        let rejection = intakeVerdict(TestPKI.sign(header: header, payload: TestJWS.transactionPayload()), verifier)
        #expect(rejection?.code == "invalid-certificate")
        #expect(rejection?.detail.hasPrefix("the intermediate certificate (x5c[1])") == true)
    }

    @Test func anX5CEntryThatIsNotACertificateIsAnInvalidCertificate() {
        let header = JSONValue.object([("alg", .string("ES256")), ("x5c", .array([
            .string(TestPKI.certificate("leaf")), .string(TestPKI.certificate("intermediate")), .string("AAECAw=="),
        ]))])
        let rejection = intakeVerdict(TestPKI.sign(header: header, payload: TestJWS.transactionPayload()), verifier)
        #expect(rejection?.code == "invalid-certificate")
        #expect(rejection?.detail.hasPrefix("the root certificate (x5c[2])") == true)
    }

    @Test func aLeafWithAP384KeyIsAnInvalidCertificate() {
        let rejection = intakeVerdict(Self.transaction(chain: ["leaf-p384", "intermediate", "root"]), verifier)
        #expect(rejection?.code == "invalid-certificate")
        #expect(rejection?.detail.contains("not an elliptic-curve key on P-256") == true)
    }

    // MARK: - Chain

    @Test func aChainToALookAlikeRootIsAnInvalidChain() {
        let rejection = intakeVerdict(
            Self.transaction(chain: ["leaf-under-lookalike", "lookalike-intermediate", "lookalike-root"]), verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.hasPrefix("unable to get local issuer certificate at signedDate 2025-10-09T08:53:20Z")
            == true)
    }

    @Test func theThirdX5CEntryIsNeverTrusted() {
        let rejection = intakeVerdict(
            Self.transaction(chain: ["leaf-under-lookalike", "lookalike-intermediate", "root"]), verifier)
        #expect(rejection?.code == "invalid-chain")
    }

    @Test func aLeafIssuedByTheRootDirectlyIsAnInvalidChain() {
        let rejection = intakeVerdict(Self.transaction(chain: ["leaf-from-root", "intermediate", "root"]), verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.contains("the path to the root has 2 certificates") == true)
    }

    @Test func anIntermediateThatIsNotACAIsAnInvalidChain() {
        let rejection = intakeVerdict(
            Self.transaction(chain: ["leaf-under-intermediate-not-ca", "intermediate-not-ca", "root"]), verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.contains("the intermediate") == true)
    }

    @Test func aLeafExpiredAtTheSignedDateIsAnInvalidChain() {
        let rejection = intakeVerdict(Self.transaction(signedDate: TestPKI.afterLeafValidity), verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.hasPrefix("certificate has expired at signedDate 2026-01-01T00:00:01Z (the leaf ")
            == true)
    }

    @Test func aLeafNotYetValidAtTheSignedDateIsAnInvalidChain() {
        let rejection = intakeVerdict(Self.transaction(signedDate: TestPKI.beforeLeafValidity), verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.hasPrefix("certificate is not yet valid at signedDate 2023-12-31T23:59:59Z") == true)
    }

    @Test func aLeafWithoutItsOIDIsMissingOID() {
        let rejection = intakeVerdict(Self.transaction(chain: ["leaf-no-oid", "intermediate", "root"]), verifier)
        #expect(rejection?.code == "missing-oid")
        #expect(rejection?.detail.hasPrefix("leaf lacks 1.2.840.113635.100.6.11.1") == true)
    }

    @Test func anIntermediateWithoutItsOIDIsMissingOID() {
        let rejection = intakeVerdict(
            Self.transaction(chain: ["leaf-under-intermediate-no-oid", "intermediate-no-oid", "root"]), verifier)
        #expect(rejection?.code == "missing-oid")
        #expect(rejection?.detail.hasPrefix("intermediate lacks 1.2.840.113635.100.6.2.1") == true)
    }

    // MARK: - Claims

    @Test func anotherBundleIsAWrongBundleID() {
        let rejection = intakeVerdict(Self.transaction(bundleId: "com.other"), verifier)
        #expect(rejection?.code == "wrong-bundle-id")
        #expect(rejection?.detail.hasPrefix("com.other (want com.example.app) in signedTransactionInfo") == true)
    }

    @Test func anotherEnvironmentIsAWrongEnvironment() {
        let rejection = intakeVerdict(Self.transaction(environment: "Production"), verifier)
        #expect(rejection?.code == "wrong-environment")
        #expect(rejection?.detail.hasPrefix("Production (want Sandbox)") == true)
    }

    @Test func anotherAppAppleIDInAProductionNotificationIsAWrongAppAppleID() throws {
        let production = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(appAppleID: 42,
                                                                                         environment: .production))
        let rejection = intakeVerdict(TestPKI.sign(payload: Self.productionNotification(appAppleId: 1_234_567_890)),
                                      production)
        #expect(rejection?.code == "wrong-app-apple-id")
        #expect(rejection?.detail.hasPrefix("1234567890 (want 42) in signedPayload") == true)
        #expect(intakeVerdict(TestPKI.sign(payload: Self.productionNotification(appAppleId: 42)), production) == nil)
    }

    @Test func aProductionServerTakesAppReviewsSandboxPurchasesAndKeepsTheProductionChecks() throws {
        let both = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(appAppleID: 42,
                                                                                   environments: [.production, .sandbox]))
        #expect(intakeVerdict(Self.transaction(environment: "Sandbox"), both) == nil)
        #expect(intakeVerdict(Self.transaction(environment: "Production"), both) == nil)
        let xcode = intakeVerdict(Self.transaction(environment: "Xcode"), both)
        #expect(xcode?.code == "wrong-environment")
        #expect(xcode?.detail.hasPrefix("Xcode (want Production or Sandbox)") == true)
        // A sandbox notification carries no appAppleId check; a production one does.
        #expect(intakeVerdict(TestPKI.sign(payload: TestJWS.notificationPayload()), both) == nil)
        #expect(intakeVerdict(TestPKI.sign(payload: Self.productionNotification(appAppleId: 7)), both)?.code
                == "wrong-app-apple-id")
        #expect(intakeVerdict(TestPKI.sign(payload: Self.productionNotification(appAppleId: 42)), both) == nil)
    }

    @Test func theAppAppleIDIsNotCheckedInSandbox() throws {
        let sandbox = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(appAppleID: 42))
        #expect(intakeVerdict(TestPKI.sign(payload: TestJWS.notificationPayload()), sandbox) == nil)
    }

    @Test func aNestedTransactionWithAForgedSignatureIsRejected() {
        let nested = Self.replacing(segment: 1, of: Self.transaction(),
                                    with: TestJWS.base64URL(TestJWS.transactionPayload(transactionId: "1").serialized))
        let notification = TestPKI.sign(payload: TestJWS.notificationPayload(signedTransactionInfo: nested))
        let rejection = intakeVerdict(notification, verifier)
        #expect(rejection?.code == "invalid-signature")
        #expect(rejection?.detail.contains("data.signedTransactionInfo of signedPayload") == true)
    }

    @Test func aNestedRenewalInfoFromAnotherEnvironmentIsAWrongEnvironment() {
        let renewal = TestPKI.sign(payload: TestJWS.renewalInfoPayload().merging([("environment", .string("Production"))]))
        let notification = TestPKI.sign(payload: TestJWS.notificationPayload(signedTransactionInfo: Self.transaction(),
                                                                             signedRenewalInfo: renewal))
        let rejection = intakeVerdict(notification, verifier)
        #expect(rejection?.code == "wrong-environment")
        #expect(rejection?.detail.contains("data.signedRenewalInfo of signedPayload") == true)
    }

    @Test func anUploadedRenewalInfoIsVerifiedToo() {
        let renewal = Self.replacing(segment: 2, of: TestPKI.sign(payload: TestJWS.renewalInfoPayload()),
                                     with: TestJWS.base64URL(TestJWS.placeholderSignature))
        let rejection = intakeVerdict(TestDrop.transactionUpload(Self.transaction(), renewal: renewal), verifier)
        #expect(rejection?.code == "invalid-signature")
        #expect(rejection?.detail.contains("signedRenewalInfo") == true)
    }

    @Test func aRenewalInfoWithoutSignedDateIsMissingAField() {
        let renewal = TestPKI.sign(payload: TestJWS.renewalInfoPayload().removing("signedDate"))
        let rejection = intakeVerdict(TestDrop.transactionUpload(Self.transaction(), renewal: renewal), verifier)
        #expect(rejection?.code == "missing-field")
        #expect(rejection?.detail.contains("signedDate") == true)
    }

    @Test func anExternalPurchaseTokenNotificationTakesItsEnvironmentFromTheID() {
        let payload = JSONValue.object([
            ("notificationType", .string("EXTERNAL_PURCHASE_TOKEN")), ("subtype", .string("UNREPORTED")),
            ("notificationUUID", .string("0b1c2d3e-0000-4000-8000-000000000001")),
            ("externalPurchaseToken", .object([
                ("externalPurchaseId", .string("SANDBOX_1234")), ("tokenCreationDate", .integer(1_760_000_000_000)),
                ("appAppleId", .integer(1_234_567_890)), ("bundleId", .string("com.example.app")),
            ])),
            ("version", .string("2.0")), ("signedDate", .integer(TestPKI.insideLeafValidity)),
        ])
        #expect(intakeVerdict(TestPKI.sign(payload: payload), verifier) == nil)
    }

    // MARK: - Structure (refused while decoding, before any signature check)

    @Test func twoSegmentsAreMalformed() {
        let parts = Self.transaction().split(separator: ".")
        let rejection = intakeVerdict(parts[0] + "." + parts[1], verifier)
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.contains("has 2 segments") == true)
    }

    @Test func aTruncatedSegmentIsMalformed() {
        let jws = Self.transaction()
        #expect(intakeVerdict(String(jws.dropLast()), verifier)?.code == "malformed-jws")
    }

    @Test func aSegmentOutsideTheBase64URLAlphabetIsMalformed() {
        let jws = Self.transaction()
        let forged = "+" + jws.dropFirst()
        let rejection = intakeVerdict(forged, verifier)
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.contains("standard base64 character") == true)
    }

    @Test func paddingIsMalformed() {
        let parts = Self.transaction().split(separator: ".").map(String.init)
        let rejection = intakeVerdict(parts[0] + "." + parts[1] + "=." + parts[2], verifier)
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.contains("padding") == true)
    }

    @Test func duplicateHeaderKeysAreMalformed() {
        let x5c = TestPKI.x5c(TestPKI.validChain).serializedString
        let forged = TestPKI.sign(headerJSON: #"{"alg":"ES256","alg":"none","x5c":\#(x5c)}"#,
                                  payloadJSON: TestJWS.transactionPayload().serializedString)
        let rejection = intakeVerdict(forged, verifier)
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.contains("duplicate key") == true)
    }

    @Test func anOversizeHeaderIsMalformed() {
        let header = TestPKI.header().merging([("padding", .string(String(repeating: "x", count: 17 * 1024)))])
        let rejection = intakeVerdict(TestPKI.sign(header: header, payload: TestJWS.transactionPayload()), verifier)
        #expect(rejection?.code == "malformed-jws")
        #expect(rejection?.detail.contains("more than the 16384 allowed") == true)
    }

    // MARK: - StoreKit testing

    @Test func xcodeDataIsTakenWithoutSignatureChecks() throws {
        let xcode = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(environment: .xcode))
        let unsigned = TestJWS.make(payload: TestJWS.transactionPayload(environment: "Xcode"))
        #expect(intakeVerdict(unsigned, xcode) == nil)
    }

    @Test func xcodeDataIsStillCheckedForBundleAndEnvironment() throws {
        let xcode = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(environment: .xcode))
        #expect(intakeVerdict(TestJWS.make(payload: TestJWS.transactionPayload(bundleId: "com.other",
                                                                               environment: "Xcode")), xcode)?.code
            == "wrong-bundle-id")
        #expect(intakeVerdict(TestJWS.make(payload: TestJWS.transactionPayload()), xcode)?.code == "wrong-environment")
    }

    @Test func envelopesCarryNoSignatureAndPass() throws {
        let item = Item(key: try #require(ItemKey("order-1")), version: ItemVersion(primary: 1), kind: .envelope,
                        payload: .object([]))
        #expect(throws: Never.self) { try verifier.verify(item) }
    }

    static func productionNotification(appAppleId: Int64) -> JSONValue {
        TestJWS.notificationPayload().merging([("data", .object([
            ("appAppleId", .integer(appAppleId)), ("bundleId", .string("com.example.app")),
            ("bundleVersion", .string("42")), ("environment", .string("Production")),
        ]))])
    }
}
