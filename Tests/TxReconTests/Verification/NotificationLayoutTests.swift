// Notifications whose layout txrecon learned late or does not know yet,
// signed with the test PKI: RESCIND_CONSENT's `appData` and its app
// transaction, a type and a container made up for the test, and the one
// notification that cannot be placed (it names no app).
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct NotificationLayoutTests {
    let verifier: SignedDataVerifier

    init() throws {
        verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
    }

    static func appTransaction(_ payload: JSONValue = TestJWS.appTransactionPayload()) -> String {
        TestPKI.sign(payload: payload)
    }

    static func rescindConsent(_ appTransaction: String = appTransaction()) -> [UInt8] {
        TestDrop.notificationBody(TestPKI.sign(payload: TestJWS.rescindConsentPayload(
            signedAppTransactionInfo: appTransaction)))
    }

    /// A notification of a type and with a container made up for the test
    /// (TestJWS.madeUpNotificationPayload), its signed member `nested`.
    static func future(signedMember: String? = nil, claims: Bool = true,
                       nested: JSONValue = TestJWS.parentalChoicePayload) -> [UInt8] {
        TestDrop.notificationBody(TestPKI.sign(payload: TestJWS.madeUpNotificationPayload(
            signedParentalChoiceInfo: signedMember ?? TestPKI.sign(payload: nested), claims: claims)))
    }

    private func decode(_ bytes: [UInt8]) throws -> (Item, [AppleNovelty]) {
        var novelties: [AppleNovelty] = []
        let decoded = try InputDecoder().decode(bytes, verifyingWith: verifier, novelties: &novelties)
        guard case let .item(item) = decoded else { throw Rejection("test", "not an item") }
        return (item, novelties)
    }

    // MARK: RESCIND_CONSENT

    @Test func aRescindConsentIsDeliveredWithItsAppTransactionVerifiedAndDecoded() throws {
        let appTransaction = Self.appTransaction()
        let (item, novelties) = try decode(Self.rescindConsent(appTransaction))
        #expect(item.key.rawValue == "002e14d5-51f5-4503-b5a8-c3a1af68eb20", "keyed by its notificationUUID")
        #expect(item.kind == .notification)
        #expect(item.fields.notificationType == "RESCIND_CONSENT")
        #expect(item.fields.bundleId == "com.example.app" && item.fields.environment == "Sandbox")
        #expect(item.signedStrings.map(\.name) == ["signedPayload", "signedAppTransactionInfo"])
        #expect(item.signedStrings[1].value == appTransaction)
        #expect(item.decodedPayloads.map(\.name) == ["notification", "appTransaction"])
        #expect(novelties.isEmpty, "RESCIND_CONSENT and appData are Apple's documented layout")
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["appTransaction"] == TestJWS.appTransactionPayload())
        #expect(body["notification"]?["appData"]?["signedAppTransactionInfo"]?.stringValue == appTransaction)
    }

    @Test func aRescindConsentWhoseAppTransactionIsForgedIsRefused() {
        let genuine = Self.appTransaction()
        let other = TestJWS.appTransactionPayload().merging([("appTransactionId", .string("99999"))])
        let forged = SignedDataVerifierTests.replacing(segment: 1, of: genuine, with: TestJWS.base64URL(other.serialized))
        let rejection = intakeVerdict(Self.rescindConsent(forged), verifier)
        #expect(rejection?.code == "invalid-signature")
        #expect(rejection?.detail.contains("appData.signedAppTransactionInfo of signedPayload") == true)
    }

    @Test func anAppTransactionOfAnotherAppIsAWrongBundleID() {
        let other = Self.appTransaction(TestJWS.appTransactionPayload(bundleId: "com.example.other"))
        #expect(intakeVerdict(Self.rescindConsent(other), verifier)?.code == "wrong-bundle-id")
    }

    @Test func anAppTransactionIsCheckedAtItsReceiptCreationDate() {
        let expired = Self.appTransaction(TestJWS.appTransactionPayload(receiptCreationDate: TestPKI.afterLeafValidity))
        let rejection = intakeVerdict(Self.rescindConsent(expired), verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.hasPrefix("certificate has expired at receiptCreationDate ") == true,
                "names the time it was checked at: \(rejection?.detail ?? "accepted")")
    }

    @Test func aProductionAppTransactionOfAnotherAppAppleIDIsRefused() throws {
        let production = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(appAppleID: 1_234_567_890,
                                                                                        environment: .production))
        func consent(_ appAppleId: Int64) -> [UInt8] {
            TestDrop.notificationBody(TestPKI.sign(payload: TestJWS.rescindConsentPayload(
                signedAppTransactionInfo: Self.appTransaction(TestJWS.appTransactionPayload(
                    appAppleId: appAppleId, receiptType: "Production")),
                environment: "Production")))
        }
        #expect(intakeVerdict(consent(1_234_567_890), production) == nil)
        #expect(intakeVerdict(consent(7), production)?.code == "wrong-app-apple-id")
    }

    // MARK: What Apple adds next

    /// Unverified (Mode=none), a made-up type is anyone's: no novelty, so
    /// no warning and no metric series per name a producer invents.
    @Test func anUnverifiedNotificationNamesNoNovelty() throws {
        var novelties: [AppleNovelty] = []
        _ = try InputDecoder().decode(Self.future(), verifyingWith: nil, novelties: &novelties)
        #expect(novelties.isEmpty)
    }

    @Test func aTypeAndAContainerMadeUpForTheTestAreDeliveredAndNamedAsNovelties() throws {
        let (item, novelties) = try decode(Self.future())
        #expect(item.key.rawValue == "5e0c7a7e-0000-4000-8000-000000000027")
        #expect(item.fields.bundleId == "com.example.app", "the claims come from the container that names them")
        #expect(item.signedStrings.map(\.name) == ["signedPayload", "signedParentalChoiceInfo"],
                "a `signed…` member that is no JWS is plain data")
        #expect(item.decodedPayloads.map(\.name) == ["notification", "decodedParentalChoiceInfo"])
        #expect(novelties == [.notificationType("PARENTAL_CHOICE"), .container("parentalData"),
                              .signedMember("signedParentalChoiceInfo")])
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["decodedParentalChoiceInfo"]?["choice"]?.stringValue == "withdrawn")
        #expect(body["notification"]?["parentalData"]?["signedNote"]?.stringValue == "not a JWS, just words")
    }

    /// A `signed…` member Apple adds may hold a dotted word of the base64url
    /// alphabet: plain data, never a malformed JWS that refuses the
    /// genuine notification.
    @Test func aDottedWordInAnUnknownSignedMemberIsPlainData() throws {
        for word in ["apps.apple.com", "v2.1.0"] {
            let (item, _) = try decode(Self.future(signedMember: word))
            #expect(item.signedStrings.map(\.name) == ["signedPayload"], "\(word)")
        }
    }

    @Test func aForgedSignedMemberOfAnUnknownContainerRefusesTheWholeNotification() {
        let genuine = TestPKI.sign(payload: .object([("signedDate", .integer(1_760_000_000_400))]))
        let forged = SignedDataVerifierTests.replacing(segment: 2, of: genuine,
                                                       with: TestJWS.base64URL(TestJWS.placeholderSignature))
        let rejection = intakeVerdict(Self.future(signedMember: forged), verifier)
        #expect(rejection?.code == "invalid-signature")
        #expect(rejection?.detail.contains("parentalData.signedParentalChoiceInfo of signedPayload") == true)
    }

    @Test func anUnknownSignedMemberIsCheckedForTheClaimsItCarries() {
        let otherApp = JSONValue.object([("bundleId", .string("com.example.other")),
                                         ("signedDate", .integer(1_760_000_000_400))])
        #expect(intakeVerdict(Self.future(nested: otherApp), verifier)?.code == "wrong-bundle-id")
        let noClaims = JSONValue.object([("choice", .string("withdrawn"))])
        #expect(intakeVerdict(Self.future(nested: noClaims), verifier) == nil,
                "without claims or a signing time of its own: checked at the notification's signedDate")
    }

    /// A member that names no signing time of its own is checked at the
    /// notification's, and its message says so rather than "at signedDate".
    @Test func anUnknownMemberWithoutASigningTimeIsCheckedAtTheNotificationsAndSaysSo() {
        let lookalike = TestPKI.sign(header: TestPKI.header(chain: ["leaf-under-lookalike", "lookalike-intermediate",
                                                                    "lookalike-root"]),
                                     payload: .object([("choice", .string("withdrawn"))]))
        let rejection = intakeVerdict(Self.future(signedMember: lookalike), verifier)
        #expect(rejection?.code == "invalid-chain")
        #expect(rejection?.detail.hasPrefix("unable to get local issuer certificate at the signedDate of the "
            + "notification around it ") == true, "\(rejection?.detail ?? "accepted")")
    }

    /// Transactions and renewal infos carry an environment and never an
    /// appAppleId: an unknown Production member shaped like them is
    /// checked for the appAppleId only when it carries one.
    @Test func aProductionMemberWithoutAnAppAppleIDIsNoOtherAppsAndOneWithAnotherIs() throws {
        let production = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(appAppleID: 1_234_567_890,
                                                                                        environment: .production))
        func notification(_ member: [(String, JSONValue)],
                          environment: [(String, JSONValue)] = [("environment", .string("Production"))]) -> [UInt8] {
            let signed = TestPKI.sign(payload: .object([("bundleId", .string("com.example.app"))] + environment
                                                       + [("signedDate", .integer(1_760_000_000_400))] + member))
            return TestDrop.notificationBody(TestPKI.sign(payload: .object([
                ("notificationType", .string("PARENTAL_CHOICE")),
                ("notificationUUID", .string("5e0c7a7e-0000-4000-8000-000000000031")),
                ("parentalData", .object([("bundleId", .string("com.example.app")),
                                          ("appAppleId", .integer(1_234_567_890)),
                                          ("environment", .string("Production")),
                                          ("signedParentalChoiceInfo", .string(signed))])),
                ("version", .string("2.0")), ("signedDate", .integer(1_760_000_000_500)),
            ])))
        }
        #expect(intakeVerdict(notification([]), production) == nil)
        #expect(intakeVerdict(notification([("appAppleId", .integer(7))]), production)?.code == "wrong-app-apple-id")
        // One that names no environment is of the notification's: its
        // appAppleId is checked as the notification's Production asks.
        #expect(intakeVerdict(notification([("appAppleId", .integer(7))], environment: []), production)?.code
                == "wrong-app-apple-id")
        #expect(intakeVerdict(notification([("appAppleId", .integer(1_234_567_890))], environment: []), production) == nil)
    }

    /// A DID_RENEW whose `data` holds its transaction, beside a container
    /// Apple added since (first in the JSON) whose `signedTransactionInfo`
    /// is `member`.
    static func withAddedContainer(_ member: JSONValue) -> [UInt8] {
        let renewal = TestJWS.notificationPayload(signedTransactionInfo: TestPKI.sign(payload: TestJWS.transactionPayload()))
        let added = [("previousData", JSONValue.object([("signedTransactionInfo", member)]))]
        return TestDrop.notificationBody(TestPKI.sign(payload: .object(added + (renewal.objectValue ?? []))))
    }

    /// Refused, such a notification was answered 400 by the receiver:
    /// Apple retries a few times and gives up, and it is lost.
    @Test func aSecondSignedMemberOfANameIsVerifiedAndDeliveredUnderItsContainersName() throws {
        let earlier = TestPKI.sign(payload: TestJWS.transactionPayload(transactionId: "2000000123450000"))
        let bytes = Self.withAddedContainer(.string(earlier))
        #expect(intakeVerdict(bytes, verifier) == nil)
        let (item, novelties) = try decode(bytes)
        #expect(item.key.rawValue == "2000000123456789", "the item is data's transaction, whatever the JSON's order")
        #expect(item.signedStrings.map(\.name)
                == ["signedPayload", "signedTransactionInfo", "previousData.signedTransactionInfo"])
        #expect(item.decodedPayloads.map(\.name) == ["notification", "transaction", "previousData.transaction"])
        #expect(novelties == [.container("previousData")])
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["previousData.transaction"]?["transactionId"]?.stringValue == "2000000123450000")
        #expect(body["transaction"]?["transactionId"]?.stringValue == "2000000123456789")

        let forged = SignedDataVerifierTests.replacing(segment: 2, of: earlier,
                                                       with: TestJWS.base64URL(TestJWS.placeholderSignature))
        let rejection = intakeVerdict(Self.withAddedContainer(.string(forged)), verifier)
        #expect(rejection?.code == "invalid-signature", "verified as every nested member is")
        #expect(rejection?.detail.contains("previousData.signedTransactionInfo of signedPayload") == true,
                "\(rejection?.detail ?? "accepted")")
        let otherApp = TestPKI.sign(payload: TestJWS.transactionPayload(bundleId: "com.example.other"))
        #expect(intakeVerdict(Self.withAddedContainer(.string(otherApp)), verifier)?.code == "wrong-bundle-id")
    }

    /// What Apple documents as a JWS is one where Apple documents it; in a
    /// container Apple added since, a member of that name holding anything
    /// else is plain data, never a refusal of the genuine notification.
    @Test func aDocumentedSignedNameHoldingNoStringInAnAddedContainerIsPlainData() throws {
        for value: JSONValue in [.array([.string("a"), .string("b")]), .null, .string("not a JWS")] {
            let bytes = Self.withAddedContainer(value)
            #expect(intakeVerdict(bytes, verifier) == nil, "\(value)")
            #expect(try decode(bytes).0.signedStrings.map(\.name) == ["signedPayload", "signedTransactionInfo"])
        }
        let documented = TestJWS.notificationPayload().merging([("data", .object([
            ("bundleId", .string("com.example.app")), ("environment", .string("Sandbox")),
            ("signedTransactionInfo", .integer(5)),
        ]))])
        #expect(intakeVerdict(TestDrop.notificationBody(TestPKI.sign(payload: documented)), verifier)?.code
                == "invalid-field", "where Apple documents it, it is a JWS")
    }

    /// A DID_RENEW whose `data` holds `members` beside its transaction
    /// (`transaction`, signed).
    static func renewal(data members: [(String, JSONValue)],
                        transaction: JSONValue = TestJWS.transactionPayload()) -> [UInt8] {
        let payload = TestJWS.notificationPayload().merging([("data", .object(
            members + [("signedTransactionInfo", .string(TestPKI.sign(payload: transaction)))]))])
        return TestDrop.notificationBody(TestPKI.sign(payload: payload))
    }

    /// The app's claims come from whichever member carries them: a
    /// container without a bundleId or an environment is of the app and
    /// environment its verified transaction names. Set aside before
    /// (`no-app-named`, `wrong-environment`), with the receiver's 200.
    @Test func claimsAContainerLacksAreTakenFromTheVerifiedMembers() throws {
        let noBundle = Self.renewal(data: [("environment", .string("Sandbox"))])
        #expect(intakeVerdict(noBundle, verifier) == nil)
        #expect(try decode(noBundle).0.fields.bundleId == "com.example.app")
        let noEnvironment = Self.renewal(data: [("bundleId", .string("com.example.app")),
                                                ("appAppleId", .integer(1_234_567_890))])
        #expect(intakeVerdict(noEnvironment, verifier) == nil)
        #expect(try decode(noEnvironment).0.fields.environment == "Sandbox")
        // Only ever a claim the container lacks: its own are checked as they are.
        let otherApp = Self.renewal(data: [("environment", .string("Sandbox"))],
                                    transaction: TestJWS.transactionPayload(bundleId: "com.example.other"))
        #expect(intakeVerdict(otherApp, verifier)?.code == "wrong-bundle-id")
        let production = Self.renewal(data: [("bundleId", .string("com.example.app")),
                                             ("environment", .string("Production"))])
        #expect(intakeVerdict(production, verifier)?.code == "wrong-environment",
                "the container's Production, not the transaction's Sandbox")
        // An added member that names the app is enough too.
        let named = TestPKI.sign(payload: TestJWS.parentalChoicePayload)
        #expect(intakeVerdict(Self.future(signedMember: named, claims: false), verifier) == nil)
    }

    /// Each claim a container lacks is looked for in every other, those
    /// Apple added included: one there of a type Apple never documented is
    /// no claim, never a refusal of the genuine notification (answered 400
    /// by the receiver, so lost).
    @Test func aClaimOfTheWrongTypeInAnAddedContainerIsNoClaim() throws {
        let sandbox = JSONValue.object([
            ("notificationType", .string("DID_RENEW")), ("notificationUUID", .string("u-claims")),
            ("data", .object([("bundleId", .string("com.example.app")), ("environment", .string("Sandbox"))])),
            ("newThing", .object([("appAppleId", .string("not a number")), ("bundleId", .integer(5))])),
            ("signedDate", .integer(1_760_000_000_500)),
        ])
        #expect(intakeVerdict(TestDrop.notificationBody(TestPKI.sign(payload: sandbox)), verifier) == nil)
        let documented = sandbox.merging([("data", .object([("bundleId", .string("com.example.app")),
                                                             ("environment", .string("Sandbox")),
                                                             ("appAppleId", .string("not a number"))]))])
        #expect(intakeVerdict(TestDrop.notificationBody(TestPKI.sign(payload: documented)), verifier)?.code
                == "invalid-field", "where Apple documents it, it must be one")
    }

    /// A member named as the notification itself, in a container: its own
    /// name, never the notification's (two `signedPayload` and two
    /// `notification` in the body, and the verifier taking it for the outer).
    @Test func aMemberNamedSignedPayloadIsDeliveredUnderItsContainersName() throws {
        let inner = TestPKI.sign(payload: TestJWS.notificationPayload(notificationUUID: "inner-uuid"))
        let payload = TestJWS.notificationPayload().merging([("forwarded", .object([("signedPayload", .string(inner))]))])
        let bytes = TestDrop.notificationBody(TestPKI.sign(payload: payload))
        #expect(intakeVerdict(bytes, verifier) == nil)
        let (item, _) = try decode(bytes)
        #expect(item.signedStrings.map(\.name) == ["signedPayload", "forwarded.signedPayload"])
        #expect(item.decodedPayloads.map(\.name) == ["notification", "forwarded.notification"])
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["notification"]?["notificationUUID"]?.stringValue == "9b2f7c1e-5d0a-4a47-9c1e-0123456789ab")
        #expect(body["forwarded.notification"]?["notificationUUID"]?.stringValue == "inner-uuid")
    }

    @Test func aNotificationThatNamesNoAppAnywhereIsRefusedAsNoAppNamedAtErrorLevel() {
        let rejection = intakeVerdict(Self.future(claims: false, nested: .object([("choice", .string("x"))])), verifier)
        #expect(rejection?.code == "no-app-named")
        #expect(rejection?.logPriority == .error)
        #expect(rejection?.detail.contains("names no app") == true)
        #expect(BodyVerdict.refusedBySettings.contains("no-app-named"),
                "genuine: the receiver spools it (200) for the daemon to set aside, and Apple does not resend it")
    }

    @Test func theDocumentedContainersStillNameTheApp() throws {
        for container in NotificationPayload.knownContainers where container != "externalPurchaseToken" {
            let payload = JSONValue.object([
                ("notificationType", .string("TEST")),
                ("notificationUUID", .string("u-\(container)")),
                (container, .object([("bundleId", .string("com.example.app")), ("environment", .string("Sandbox"))])),
                ("signedDate", .integer(1_760_000_000_500)),
            ])
            let (item, novelties) = try decode(TestDrop.notificationBody(TestPKI.sign(payload: payload)))
            #expect(item.fields.bundleId == "com.example.app", "\(container)")
            #expect(novelties.isEmpty, "\(container)")
        }
    }
}
