// The built txrecon binary verifying App Store data at intake (Mode=appstore):
// a mixed spool of genuine and forged files, the fix-the-configuration flow
// with requeue-rejected, and the configuration errors and warnings.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct VerificationIntegrationTests {
    static let bundleID = "com.loki-project.loki-messenger"

    static func sample(_ name: String) throws -> String {
        let bytes = try SystemCall.readFile(DaemonIntegrationTests.samples + "/" + name, limit: 1 << 20)
        return String(decoding: bytes, as: UTF8.self).trimmingASCIISpaces()
    }

    /// A transaction for the samples' app signed by the test PKI.
    static func testPKITransaction(_ id: String, chain: [String] = TestPKI.validChain, bundleId: String = bundleID,
                                   environment: String = "Sandbox",
                                   signedDate: Int64 = TestPKI.insideLeafValidity) -> String {
        TestPKI.sign(header: TestPKI.header(chain: chain),
                     payload: TestJWS.transactionPayload(transactionId: id, bundleId: bundleId,
                                                         environment: environment, signedDate: signedDate))
    }

    @Test func aProductionDaemonListingSandboxDeliversAppReviewsRealSandboxPurchase() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: """
            [Verification]
            BundleID=\(Self.bundleID)
            Environment=Production Sandbox
            AppAppleID=1234567890
            RootCertificateFile=\(DaemonIntegrationTests.repositoryRoot)/Config/AppleRootCA-G3.cer
            """)
        try await fixture.start()
        try fixture.drop(try Self.sample("01-transaction.jws"))
        try fixture.drop(try Self.sample("04-notification-refund.json"))
        #expect(await fixture.eventually { fixture.doneItems().sorted() == ["2000001024998954", "2000001032604840"] },
                "\(fixture.names("rejected"))")
        let body = try JSONValue.parse(try #require(fixture.server.requests.first { $0.header("Idempotency-Key")?
            .hasPrefix("2000001024998954:") == true }).body)
        #expect(body["environment"]?.stringValue == "Sandbox", "kept apart by the body's environment")
    }

    @Test func aMixedSpoolDeliversExactlyTheGenuineFiles() async throws {
        let fixture = try DaemonFixture()
        // Apple's root and the test PKI's, in one PEM file.
        let roots = try SystemCall.readFile(AppStoreSamples.directory + "/AppleRootCA-G3.pem", limit: 1 << 20)
            + SystemCall.readFile(TestPKI.path("root"), limit: 1 << 20)
        let rootsPath = fixture.directory.write(roots, to: "roots.pem")
        try fixture.writeConfig("", verification: """
            [Verification]
            BundleID=\(Self.bundleID)
            Environment=Sandbox
            RootCertificateFile=\(rootsPath)
            """)
        try await fixture.start()

        let genuine: [(name: String, text: String, key: String)] = [
            ("apple-transaction", try Self.sample("01-transaction.jws"), "2000001024998954"),
            ("apple-transaction-2", try Self.sample("02-transaction.jws"), "2000001027701928"),
            ("apple-refund", try Self.sample("04-notification-refund.json"), "2000001032604840"),
            ("apple-test-notification", try Self.sample("05-notification-test.json"), "592751ef-c1b8-47fc-929e-d62dee66df4c"),
            ("testpki-transaction", Self.testPKITransaction("3000000000000001"), "3000000000000001"),
        ]
        let appleParts = try Self.sample("01-transaction.jws").split(separator: ".").map(String.init)
        let forgedPayload = TestJWS.transactionPayload(transactionId: "3000000000000099", bundleId: Self.bundleID)
        let forged: [(name: String, text: String, code: String)] = [
            ("tampered-apple", appleParts[0] + "." + TestJWS.base64URL(forgedPayload.serialized) + "." + appleParts[2],
             "invalid-signature"),
            ("alg-none", TestPKI.sign(header: TestPKI.header(alg: "none"), payload: forgedPayload), "unsupported-alg"),
            ("lookalike", Self.testPKITransaction("3000000000000002",
                                                  chain: ["leaf-under-lookalike", "lookalike-intermediate", "lookalike-root"]),
             "invalid-chain"),
            ("no-leaf-oid", Self.testPKITransaction("3000000000000003", chain: ["leaf-no-oid", "intermediate", "root"]),
             "missing-oid"),
            ("expired", Self.testPKITransaction("3000000000000004", signedDate: TestPKI.afterLeafValidity), "invalid-chain"),
            ("other-app", Self.testPKITransaction("3000000000000005", bundleId: "com.other"), "wrong-bundle-id"),
            ("production", Self.testPKITransaction("3000000000000006", environment: "Production"), "wrong-environment"),
            ("unsigned", TestJWS.transaction(transactionId: "3000000000000007"), "invalid-certificate"),
            ("envelope", fixture.envelope("order-1", version: 1), "envelopes-disabled"),
        ]
        for (name, text, _) in genuine { try fixture.drop(text, name: name) }
        for (name, text, _) in forged { try fixture.drop(text, name: name) }

        #expect(await fixture.eventually { fixture.doneItems().count == genuine.count })
        #expect(await fixture.eventually { fixture.names("rejected").count == 2 * forged.count })
        // Awaited: a finish links into done/ before it unlinks (Spool.finish).
        #expect(await fixture.eventually { fixture.names("queue").isEmpty && fixture.names("new").isEmpty })
        let delivered = Set(fixture.server.requests.compactMap { $0.header("Idempotency-Key")?.split(separator: ":").first })
        #expect(delivered == Set(genuine.map { Substring($0.key) }))
        #expect(fixture.server.requests.count == genuine.count)
        for (name, _, code) in forged {
            let reason = try SystemCall.readFile(fixture.layout.rejected + "/" + name + ".reason", limit: 65536)
            #expect(String(decoding: reason, as: UTF8.self).hasPrefix(code + ": "), "\(name)")
        }
        #expect(fixture.daemon?.stderr.contains("rejected: invalid-signature: ") == true)
    }

    @Test func aBacklogExaminedOnSeveralThreadsGetsTheVerdictsOneThreadWouldGive() async throws {
        // 60 files in new/ at start: one batch, which intake splits among its
        // threads (16 or more). Every third is forged under a genuine
        // signature and every third a wrong app's: only the genuine third is
        // delivered, each forgery is rejected for its own reason.
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: """
            [Verification]
            BundleID=\(Self.bundleID)
            Environment=Sandbox
            RootCertificateFile=\(TestPKI.path("root"))
            """)
        var expected: [String: String] = [:]
        var genuine: Set<String> = []
        for index in 0..<60 {
            let id = String(3_000_000_000_000_100 + index)
            let name = String(format: "b%02d", index)
            let text: String
            switch index % 3 {
            case 0:
                text = Self.testPKITransaction(id)
                genuine.insert(id)
            case 1:
                let parts = Self.testPKITransaction(id).split(separator: ".").map(String.init)
                let payload = TestJWS.transactionPayload(transactionId: id + "9", bundleId: Self.bundleID)
                text = parts[0] + "." + TestJWS.base64URL(payload.serialized) + "." + parts[2]
                expected[name] = "invalid-signature"
            default:
                text = Self.testPKITransaction(id, bundleId: "com.other")
                expected[name] = "wrong-bundle-id"
            }
            fixture.directory.write(text, to: "spool/new/" + name, mode: 0o640)
        }
        try await fixture.start()

        #expect(await fixture.eventually { fixture.doneItems().count == genuine.count })
        #expect(await fixture.eventually { fixture.names("rejected").count == 2 * expected.count })
        #expect(Set(fixture.doneItems()) == genuine)
        #expect(fixture.names("new").isEmpty && fixture.names("queue").isEmpty)
        for (name, code) in expected {
            let reason = try SystemCall.readFile(fixture.layout.rejected + "/" + name + ".reason", limit: 65536)
            #expect(String(decoding: reason, as: UTF8.self).hasPrefix(code + ": "), "\(name)")
        }
    }

    @Test func aFileRejectedForAWrongBundleIDIsDeliveredOnceTheConfigurationIsFixedAndItIsRequeued() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: DaemonFixture.sampleVerification(bundleID: "com.example.wrong"))
        let daemon = try await fixture.start()
        try fixture.drop(try Self.sample("01-transaction.jws"), name: "purchase.jws")
        #expect(await fixture.eventually { fixture.names("rejected") == ["purchase.jws", "purchase.jws.reason"] })
        let reason = try SystemCall.readFile(fixture.layout.rejected + "/purchase.jws.reason", limit: 65536)
        #expect(String(decoding: reason, as: UTF8.self)
            .hasPrefix("wrong-bundle-id: com.loki-project.loki-messenger (want com.example.wrong) in signedTransactionInfo"))
        #expect(try await fixture.cli(["list", "rejected"]).stdout.contains("purchase.jws"))

        try fixture.writeConfig("")
        let before = fixture.notify.messages.count
        daemon.signal(SIGHUP)
        #expect(await fixture.notify.waitFor({ $0.contains("READY=1") }, from: before, timeout: .seconds(10)) != nil)
        let requeued = try await fixture.cli(["requeue-rejected", "--all"])
        #expect(requeued.status == 0, "\(requeued.stderr)")
        #expect(await fixture.eventually { fixture.doneItems() == ["2000001024998954"] }, "\(daemon.stderr)")
        #expect(fixture.names("rejected").isEmpty)
        #expect(fixture.server.requests.count == 1)
    }

    @Test func appStoreModeWithoutABundleIDExitsWith78NamingTheKey() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: "[Verification]\nEnvironment=Sandbox\n")
        let process = try DaemonProcess(["run", "--config", fixture.configPath],
                                        stderrPath: fixture.directory.path + "/bad.log")
        #expect(await process.wait(timeout: .seconds(20)) == 78)
        #expect(process.stderr.contains("txrecon.conf: Verification.BundleID: is required with Mode=appstore"))
    }

    @Test func aMissingRootFileExitsWith78NamingTheLine() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: DaemonFixture.sampleVerification(roots: "/nonexistent/root.cer"))
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 78)
        #expect(check.stderr.contains("Verification.RootCertificateFile: /nonexistent/root.cer does not exist"))
    }

    @Test func checkConfigShowsTheRootSubjectAndFingerprint() async throws {
        let fixture = try DaemonFixture()
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("Root: C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3 "
            + "SHA-256 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79"))
        #expect(check.stdout.contains("ReceiptRoot: CN=Apple Root CA,OU=Apple Certification Authority,O=Apple Inc.,C=US "
            + "SHA-256 B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24"))
        #expect(check.stdout.contains("AcceptEnvelopes=yes"))
        #expect(check.stderr.isEmpty)
    }

    @Test func modeNoneIsWarnedAboutAtStartAndDeliversUnsignedData() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: "[Verification]\nMode=none\n")
        let daemon = try await fixture.start()
        #expect(daemon.stderr.contains("Mode=none: App Store signatures are not checked"))
        try fixture.drop(TestJWS.transaction(transactionId: "4000000000000001"))
        #expect(await fixture.eventually { fixture.doneItems() == ["4000000000000001"] })
    }
}

/// What Apple added to App Store Server Notifications after this code was
/// first written, through the built daemon with the test PKI's root: the
/// body a backend gets, the warning an operator gets, the metric.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NotificationLayoutIntegrationTests {
    @Test func aRescindConsentAndANotificationOfAMadeUpLayoutAreDeliveredDecodedAndAForgeryIsRefused() async throws {
        let metrics = TemporaryDirectory("txrecon-it-metrics")
        let fixture = try DaemonFixture()
        try fixture.writeConfig("[Metrics]\nTextfileDirectory=\(metrics.path)\n", verification: DaemonFixture.sampleVerification(bundleID: "com.example.app",
                                                                                   roots: TestPKI.path("root")))
        let daemon = try await fixture.start()
        let appTransaction = TestPKI.sign(payload: TestJWS.appTransactionPayload())
        try fixture.drop(String(decoding: TestDrop.notificationBody(TestPKI.sign(payload:
            TestJWS.rescindConsentPayload(signedAppTransactionInfo: appTransaction))), as: UTF8.self), name: "consent")
        let forgedPayload = TestJWS.appTransactionPayload().merging([("appTransactionId", .string("1"))])
        var parts = appTransaction.split(separator: ".").map(String.init)
        parts[1] = TestJWS.base64URL(forgedPayload.serialized)
        let forged = TestJWS.rescindConsentPayload(signedAppTransactionInfo: parts.joined(separator: "."))
            .merging([("notificationUUID", .string("002e14d5-0000-4000-8000-00000000f0f0"))])
        try fixture.drop(String(decoding: TestDrop.notificationBody(TestPKI.sign(payload: forged)), as: UTF8.self),
                         name: "forged-consent")
        for uuid in ["5e0c7a7e-0000-4000-8000-000000000001", "5e0c7a7e-0000-4000-8000-000000000002"] {
            let madeUp = TestJWS.madeUpNotificationPayload(
                signedParentalChoiceInfo: TestPKI.sign(payload: TestJWS.parentalChoicePayload), notificationUUID: uuid)
            try fixture.drop(String(decoding: TestDrop.notificationBody(TestPKI.sign(payload: madeUp)), as: UTF8.self),
                             name: "made-up-\(uuid.suffix(1))")
        }
        #expect(await fixture.eventually { fixture.doneItems().count == 3 && fixture.names("rejected").count == 2 },
                "done: \(fixture.doneItems()), rejected: \(fixture.names("rejected"))\n\(daemon.stderr)")
        #expect(fixture.names("rejected").contains("forged-consent"))
        let reason = try SystemCall.readFile(fixture.layout.rejected + "/forged-consent.reason", limit: 65536)
        #expect(String(decoding: reason, as: UTF8.self).contains("invalid-signature"))

        let bodies = try fixture.server.requests.map { try JSONValue.parse($0.body) }
        let consent = try #require(bodies.first { $0["notificationType"]?.stringValue == "RESCIND_CONSENT" })
        #expect(consent["id"]?.stringValue == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(consent["appTransaction"] == TestJWS.appTransactionPayload())
        #expect(consent["notification"]?["appData"]?["bundleId"]?.stringValue == "com.example.app")
        let madeUp = bodies.filter { $0["notificationType"]?.stringValue == "PARENTAL_CHOICE" }
        #expect(madeUp.count == 2)
        #expect(madeUp.allSatisfy { $0["decodedParentalChoiceInfo"] == TestJWS.parentalChoicePayload })
        // One warning per name, however many notifications carry it.
        let stderr = daemon.stderr
        #expect(stderr.components(separatedBy: "carries the container parentalData").count == 2, "\(stderr)")
        #expect(stderr.components(separatedBy: "carries the notificationType PARENTAL_CHOICE").count == 2)
        #expect(stderr.contains("carries the signedMember signedParentalChoiceInfo"))
        let counted = await fixture.eventually {
            guard let bytes = try? SystemCall.readFile(metrics.path + "/txrecon.prom", limit: 1 << 20),
                  let file = try? PrometheusExposition(parsing: String(decoding: bytes, as: UTF8.self)) else { return false }
            return file.value("txrecon_apple_unknown_names_total", ["what": "container", "name": "parentalData"]) == "2"
        }
        #expect(counted, "counted once per notification in the metrics")
    }
}
