// One verifier for several apps: signed data picks its app by the bundleId
// it names, and every string of an item is checked against that app.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct SeveralAppsVerificationTests {
    let verifier: SignedDataVerifier

    /// `com.example.app` in the sandbox and production (App Apple ID 1234567890,
    /// TestJWS's), `com.example.other` in the sandbox only.
    init() throws {
        verifier = SignedDataVerifier(policy: SignedDataPolicy(roots: try VerificationFixtures.testRoots(), apps: [
            AppPolicy(name: "main", bundleID: "com.example.app", appAppleID: 1_234_567_890,
                      environments: [.production, .sandbox]),
            AppPolicy(name: "other", bundleID: "com.example.other", appAppleID: nil, environments: [.sandbox]),
        ]))
    }

    static func transaction(bundleId: String, environment: String = "Sandbox") -> String {
        SignedDataVerifierTests.transaction(bundleId: bundleId, environment: environment)
    }

    static func notification(bundleId: String, nested: String? = nil) -> [UInt8] {
        TestDrop.notificationBody(TestPKI.sign(payload: TestJWS.notificationPayload(
            signedDate: TestPKI.insideLeafValidity, signedTransactionInfo: nested, bundleId: bundleId)))
    }

    @Test func eachAppsTransactionsAndNotificationsVerify() {
        #expect(intakeVerdict(Self.transaction(bundleId: "com.example.app"), verifier) == nil)
        #expect(intakeVerdict(Self.transaction(bundleId: "com.example.other"), verifier) == nil)
        #expect(intakeVerdict(Self.notification(bundleId: "com.example.other",
                                                nested: Self.transaction(bundleId: "com.example.other")),
                              verifier) == nil)
    }

    @Test func anAppNotConfiguredIsWrongBundleIDListingTheAppsThatAre() {
        let verdict = intakeVerdict(Self.transaction(bundleId: "com.example.third"), verifier)
        #expect(verdict?.code == "wrong-bundle-id")
        #expect(verdict?.detail.contains("(want com.example.app or com.example.other)") == true, "\(String(describing: verdict))")
    }

    @Test func eachAppsOwnEnvironmentsApply() {
        #expect(intakeVerdict(Self.transaction(bundleId: "com.example.app", environment: "Production"), verifier) == nil)
        let verdict = intakeVerdict(Self.transaction(bundleId: "com.example.other", environment: "Production"), verifier)
        #expect(verdict?.code == "wrong-environment" && verdict?.detail.contains("want Sandbox") == true,
                "\(String(describing: verdict))")
    }

    @Test func eachProductionAppIsCheckedForItsOwnAppAppleID() throws {
        let twoInProduction = SignedDataVerifier(policy: SignedDataPolicy(roots: try VerificationFixtures.testRoots(), apps: [
            AppPolicy(name: "main", bundleID: "com.example.app", appAppleID: 1_234_567_890, environments: [.production]),
            AppPolicy(name: "other", bundleID: "com.example.other", appAppleID: 42, environments: [.production]),
        ]))
        func notification(_ bundleId: String) -> [UInt8] {
            func replacing(_ value: JSONValue, _ name: String, with new: JSONValue) -> JSONValue {
                guard case let .object(members) = value else { return value }
                return .object(members.map { $0.0 == name ? ($0.0, new) : $0 })
            }
            let payload = TestJWS.notificationPayload(signedDate: TestPKI.insideLeafValidity, bundleId: bundleId)
            let data = replacing(payload["data"] ?? .null, "environment", with: .string("Production"))
            return TestDrop.notificationBody(TestPKI.sign(payload: replacing(payload, "data", with: data)))
        }
        // TestJWS's notifications carry appAppleId 1234567890: main's, not other's.
        #expect(intakeVerdict(notification("com.example.app"), twoInProduction) == nil)
        let verdict = intakeVerdict(notification("com.example.other"), twoInProduction)
        #expect(verdict?.code == "wrong-app-apple-id" && verdict?.detail.contains("1234567890 (want 42)") == true,
                "\(String(describing: verdict))")
    }

    @Test func aNotificationCarryingAnotherAppsTransactionIsRefused() {
        let verdict = intakeVerdict(Self.notification(bundleId: "com.example.other",
                                                      nested: Self.transaction(bundleId: "com.example.app")),
                                    verifier)
        #expect(verdict?.code == "wrong-bundle-id")
        #expect(verdict?.detail.contains("com.example.app (want com.example.other) in data.signedTransactionInfo") == true,
                "\(String(describing: verdict))")
    }
}
