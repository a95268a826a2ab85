// Several apps in one installation, end to end: the built daemon serving two
// apps of the test PKI and the real Sandbox samples' app (the main file's),
// routing by `[Match] App=`; a fourth app's data set aside; the receiver
// taking every app's notifications on one URL; `txrecon sweep` walking each
// app against its own stand-in of Apple's API with its own checkpoint.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

/// A daemon whose main file's app is the real samples' (`main`), with
/// apps/alpha.conf and apps/beta.conf of the test PKI, both roots trusted,
/// and a destination `alpha` that takes alpha's items only.
private final class ThreeApps {
    static let alpha = "com.example.alpha"
    static let beta = "com.example.beta"
    let fixture: DaemonFixture
    let alphaBackend: LoopbackHTTPServer

    init(extra: String = "", alphaAnswers: @escaping @Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply
            = { _ in .status(200) }) throws {
        fixture = try DaemonFixture()
        let roots = try SystemCall.readFile(AppStoreSamples.directory + "/AppleRootCA-G3.pem", limit: 1 << 20)
            + SystemCall.readFile(TestPKI.path("root"), limit: 1 << 20)
        let rootsPath = fixture.directory.write(roots, to: "roots.pem")
        try fixture.writeConfig(extra, verification: """
            [Verification]
            BundleID=\(VerificationIntegrationTests.bundleID)
            Environment=Sandbox
            RootCertificateFile=\(rootsPath)
            """)
        _ = fixture.directory.write("[Verification]\nBundleID=\(Self.alpha)\n", to: "apps/alpha.conf")
        _ = fixture.directory.write("[Verification]\nBundleID=\(Self.beta)\n", to: "apps/beta.conf")
        alphaBackend = try LoopbackHTTPServer(handler: alphaAnswers)
        _ = fixture.directory.write("[Backend]\nURL=\(alphaBackend.url)alpha\n[Match]\nApp=alpha\n",
                                    to: "destinations/alpha.conf")
    }

    static func transaction(_ id: String, bundleId: String) -> String {
        VerificationIntegrationTests.testPKITransaction(id, bundleId: bundleId)
    }

    static func notification(_ uuid: String, bundleId: String) -> [UInt8] {
        TestDrop.notificationBody(TestPKI.sign(payload: TestJWS.notificationPayload(
            notificationType: "DID_RENEW", notificationUUID: uuid, signedDate: TestPKI.insideLeafValidity,
            bundleId: bundleId)))
    }

    deinit { alphaBackend.stop() }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct AppsIntegrationTests {
    @Test func aRetryAStaleCopyAndTheirJournalLinesNameTheApp() async throws {
        // alpha's destination fails its first request, then takes everything.
        let answered = Mutex(0)
        let apps = try ThreeApps(alphaAnswers: { _ in
            answered.withLock { count in
                count += 1
                return count == 1 ? .status(503) : .status(200)
            }
        })
        let fixture = apps.fixture
        try await fixture.start()
        let transaction = ThreeApps.transaction("4000000000000011", bundleId: ThreeApps.alpha)
        try fixture.drop(transaction, name: "alpha-first")
        #expect(await fixture.eventually { fixture.doneItems() == ["4000000000000011"] })
        let alphaDone = fixture.layout.destination("alpha").done
        #expect(await fixture.eventually { ((try? SystemCall.listDirectory(alphaDone)) ?? []).contains("4000000000000011") })
        // The same snapshot again: not newer than the delivered one.
        try fixture.drop(transaction, name: "alpha-again")
        func lines(_ needle: String) -> [Substring] {
            (fixture.daemon?.stderr ?? "").split(separator: "\n").filter { $0.contains(needle) }
        }
        #expect(await fixture.eventually { lines("4000000000000011: version").count >= 1 })
        #expect(lines("4000000000000011: attempt 1 failed").contains { $0.contains("TXRECON_APP=alpha") },
                "\(lines("4000000000000011"))")
        #expect(lines("4000000000000011: version").allSatisfy { $0.contains("TXRECON_APP=alpha") },
                "\(lines("superseded"))")
    }

    @Test func aVerifiedDropNoDestinationTakesIsRejectedUnderItsAppsName() async throws {
        // [Backend] takes main's items only, alpha's destination alpha's:
        // beta's transaction verifies, and nothing takes it.
        let apps = try ThreeApps(extra: "[Match]\nApp=main\n")
        let fixture = apps.fixture
        try await fixture.start()
        try fixture.drop(ThreeApps.transaction("4000000000000021", bundleId: ThreeApps.beta), name: "beta-unrouted")
        #expect(await fixture.eventually { fixture.names("rejected") == ["beta-unrouted", "beta-unrouted.reason"] })
        let rejected = (fixture.daemon?.stderr ?? "").split(separator: "\n")
            .filter { $0.contains("new/beta-unrouted rejected: no-destination") }
        #expect(rejected.count == 1 && rejected.allSatisfy { $0.contains("TXRECON_APP=beta") }, "\(rejected)")
    }

    @Test func oneDaemonDeliversThreeAppsRoutesByAppAndSetsAFourthAside() async throws {
        let apps = try ThreeApps()
        let fixture = apps.fixture
        try await fixture.start()
        try fixture.drop(try VerificationIntegrationTests.sample("01-transaction.jws"), name: "main-transaction")
        try fixture.drop(try VerificationIntegrationTests.sample("04-notification-refund.json"), name: "main-refund")
        try fixture.drop(ThreeApps.transaction("4000000000000001", bundleId: ThreeApps.alpha), name: "alpha-transaction")
        try fixture.drop(String(decoding: ThreeApps.notification("a1a1a1a1-0000-4000-8000-000000000001",
                                                                 bundleId: ThreeApps.alpha), as: UTF8.self),
                         name: "alpha-notification")
        try fixture.drop(ThreeApps.transaction("4000000000000002", bundleId: ThreeApps.beta), name: "beta-transaction")
        try fixture.drop(ThreeApps.transaction("4000000000000003", bundleId: "com.example.delta"), name: "delta")

        let delivered = ["2000001024998954", "2000001032604840", "4000000000000001", "4000000000000002",
                         "a1a1a1a1-0000-4000-8000-000000000001"]
        #expect(await fixture.eventually { fixture.doneItems() == delivered.sorted() }, "\(fixture.names("rejected"))")
        // [Backend] takes every app; alpha only alpha's transaction and
        // notification: the done/ of each destination is final once both are.
        let alphaLayout = fixture.layout.destination("alpha")
        func files(_ directory: String) -> [String] {
            ((try? SystemCall.listDirectory(directory)) ?? []).filter { !$0.hasSuffix(".state") }
        }
        #expect(await fixture.eventually {
            files(alphaLayout.done).count == 2 && files(alphaLayout.queue).isEmpty && files(alphaLayout.new).isEmpty
        }, "\(files(alphaLayout.done)) \(files(alphaLayout.queue)) \(files(alphaLayout.new))")
        #expect(apps.alphaBackend.requests.count == 2)
        let alphaKeys = apps.alphaBackend.requests.compactMap { $0.header("Idempotency-Key")?.split(separator: ":").first }
        #expect(Set(alphaKeys.map(String.init)) == ["4000000000000001", "a1a1a1a1-0000-4000-8000-000000000001"])
        #expect(fixture.server.requests.count == 5)
        // A fourth app's data is set aside as wrong-bundle-id, naming what to do.
        #expect(await fixture.eventually { fixture.names("rejected").contains("delta.reason") })
        let reason = String(decoding: try SystemCall.readFile(fixture.layout.rejected + "/delta.reason", limit: 1 << 16),
                            as: UTF8.self)
        #expect(reason.contains("wrong-bundle-id") && reason.contains("apps/NAME.conf"), "\(reason)")
        // The journal names each item's app; STATUS counts each app's deliveries.
        #expect(await fixture.eventually {
            let log = fixture.daemon?.stderr ?? ""
            return log.contains("4000000000000002: delivered on attempt") && log.contains("TXRECON_APP=beta")
                && log.contains("TXRECON_APP=alpha") && log.contains("TXRECON_APP=main")
        })
        let line = await fixture.notify.waitFor({
            ($0.value(of: "STATUS") ?? "").contains("delivered by app: main 2, alpha 4, beta 1")
        }, timeout: .seconds(20))
        #expect(line != nil, "\(fixture.notify.messages.suffix(3))")
        let show = try await fixture.cli(["show", "4000000000000002"])
        #expect(show.stdout.contains("app:        beta"), "\(show.stdout)")
        let list = try await fixture.cli(["list", "done"])
        #expect(list.stdout.split(separator: "\n").contains {
            $0.hasPrefix("backend: 4000000000000002  ") && $0.hasSuffix("  app beta")
        }, "\(list.stdout)")
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 0 && check.stdout.contains("App alpha (") && check.stdout.contains("BundleID=\(ThreeApps.beta)"),
                "\(check.stdout)\(check.stderr)")
    }

    @Test func aReloadAddsAnAppAndItsSetAsideDataIsTakenAgain() async throws {
        let apps = try ThreeApps()
        let fixture = apps.fixture
        let daemon = try await fixture.start()
        try fixture.drop(ThreeApps.transaction("4000000000000004", bundleId: "com.example.gamma"), name: "gamma")
        #expect(await fixture.eventually { fixture.names("rejected").contains("gamma.reason") })

        _ = fixture.directory.write("[Verification]\nBundleID=com.example.gamma\n", to: "apps/gamma.conf")
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually { (fixture.daemon?.stderr ?? "").contains("configuration reloaded") })
        let requeue = try await fixture.cli(["requeue-rejected", "gamma"])
        #expect(requeue.status == 0, "\(requeue.stderr)")
        #expect(await fixture.eventually { fixture.doneItems() == ["4000000000000004"] })
    }

    @Test func aBadAppFileIsRefusedWith78AtCheckConfigAndStartAndOnReloadTheAppsStay() async throws {
        let apps = try ThreeApps()
        let fixture = apps.fixture
        let daemon = try await fixture.start()
        _ = fixture.directory.write("[Verification]\nBundleID=\(ThreeApps.alpha)\n", to: "apps/copy.conf")
        let message = "apps/copy.conf:2: Verification.BundleID: \(ThreeApps.alpha) is also the bundle id of the app alpha"
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 78 && check.stderr.contains(message), "\(check.stderr)")

        // A reload refuses it; the running apps stay and beta's data is taken.
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually { daemon.stderr.contains("reload refused") && daemon.stderr.contains(message) })
        try fixture.drop(ThreeApps.transaction("4000000000000005", bundleId: ThreeApps.beta))
        #expect(await fixture.eventually { fixture.doneItems() == ["4000000000000005"] })

        // A start refuses it.
        daemon.signal(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(20)) == 0)
        let start = try await fixture.cli(["run"])
        #expect(start.status == 78 && start.stderr.contains(message), "\(start.stderr)")
    }

    @Test func theReceiverTakesEveryAppsNotificationsOnOneURL() async throws {
        let receiving = try ReceiverFixture()
        let roots = try SystemCall.readFile(AppStoreSamples.directory + "/AppleRootCA-G3.pem", limit: 1 << 20)
            + SystemCall.readFile(TestPKI.path("root"), limit: 1 << 20)
        let rootsPath = receiving.daemon.directory.write(roots, to: "roots.pem")
        try receiving.daemon.writeConfig("[Receive]\nListen=127.0.0.1:\(receiving.port)", verification: """
            [Verification]
            BundleID=\(VerificationIntegrationTests.bundleID)
            Environment=Sandbox
            RootCertificateFile=\(rootsPath)
            """)
        _ = receiving.daemon.directory.write("[Verification]\nBundleID=\(ThreeApps.alpha)\n", to: "apps/alpha.conf")
        _ = receiving.daemon.directory.write("[Verification]\nBundleID=\(ThreeApps.beta)\n", to: "apps/beta.conf")
        try await receiving.start()
        try await receiving.daemon.start()
        let main = try await receiving.post("/appstore/notifications", sample: "04-notification-refund.json")
        let alpha = try await receiving.post("/appstore/notifications",
                                             ThreeApps.notification("a1a1a1a1-0000-4000-8000-000000000002",
                                                                    bundleId: ThreeApps.alpha))
        // An app's own path is a label to count by; the signed bundleId decides.
        let beta = try await receiving.post("/appstore/notifications/beta",
                                            ThreeApps.notification("b2b2b2b2-0000-4000-8000-000000000003",
                                                                   bundleId: ThreeApps.beta))
        let unknownPath = try await receiving.post("/appstore/notifications/zeta",
                                                   ThreeApps.notification("b2b2b2b2-0000-4000-8000-000000000009",
                                                                          bundleId: ThreeApps.beta))
        #expect(unknownPath.status == 404)
        let delta = try await receiving.post("/appstore/notifications",
                                             ThreeApps.notification("d4d4d4d4-0000-4000-8000-000000000004",
                                                                    bundleId: "com.example.delta"))
        #expect([main.status, alpha.status, beta.status] == [200, 200, 200], "\(alpha.body) \(beta.body)")
        // Genuine but of no app configured: spooled for rejected/, so that
        // Apple is not asked again for what a fixed configuration takes.
        #expect(delta.status == 200 && delta.body.contains("wrong-bundle-id"), "\(delta.status) \(delta.body)")
        #expect(await receiving.daemon.eventually {
            receiving.daemon.names("rejected").contains { $0.hasSuffix(".reason") }
        })
        #expect(await receiving.daemon.server.waitForRequests(count: 3, timeout: .seconds(20)))
        #expect(Set(receiving.daemon.doneItems()) == ["2000001032604840", "a1a1a1a1-0000-4000-8000-000000000002",
                                                      "b2b2b2b2-0000-4000-8000-000000000003"])
    }

    @Test func theSweepWalksEachAppWithItsOwnCheckpointAndToken() async throws {
        let fixture = try DaemonFixture()
        let key = TestSigningKey()
        let now = WallTime.nowMilliseconds
        // One stand-in of Apple's API per app: each answers only tokens for its bundle id.
        func api(bundleID: String, uuid: String) throws -> MockAppStoreServerAPI {
            var identity = MockAppStoreServerAPI.Identity(key: key)
            identity.bundleID = bundleID
            let payload = TestPKI.sign(payload: TestJWS.notificationPayload(
                notificationUUID: uuid, signedDate: TestPKI.insideLeafValidity, bundleId: bundleID))
            return try MockAppStoreServerAPI(identity: identity,
                                             entries: [MockAppStoreServerAPI.Entry(date: now - 600_000,
                                                                                   signedPayload: payload)],
                                             historyDays: 30, now: { WallTime.nowMilliseconds })
        }
        let alpha = try api(bundleID: ThreeApps.alpha, uuid: "a1a1a1a1-0000-4000-8000-000000000005")
        let beta = try api(bundleID: ThreeApps.beta, uuid: "b2b2b2b2-0000-4000-8000-000000000006")
        let keyPath = fixture.directory.write(key.pkcs8PEM, to: "appstore-key.p8", mode: 0o600)
        var sweep = alpha.sweepSection(privateKeyFile: keyPath)
        sweep = sweep.split(separator: "\n").filter { !$0.hasPrefix("BundleID=") }.joined(separator: "\n")
        try fixture.writeConfig(sweep + "\nMaxRequestsPerSecond=50", verification: """
            [Verification]
            Mode=none
            """)
        _ = fixture.directory.write("[Verification]\nBundleID=\(ThreeApps.alpha)\n", to: "apps/alpha.conf")
        _ = fixture.directory.write("[Verification]\nBundleID=\(ThreeApps.beta)\n[Sweep]\nBaseURL=\(beta.url)\n",
                                    to: "apps/beta.conf")
        try fixture.layout.createMissingDirectories()

        let run = try await fixture.cli(["sweep"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(alpha.problems == [] && beta.problems == [])
        #expect(run.stderr.contains("TXRECON_APP=alpha") || run.stderr.contains("alpha: sweep"), "\(run.stderr)")
        let checkpoints = ["apps/alpha/sweep/checkpoint", "apps/beta/sweep/checkpoint"]
        for checkpoint in checkpoints {
            #expect(!SystemCall.isMissing(fixture.layout.root + "/" + checkpoint), "\(checkpoint)")
        }
        #expect(fixture.names("new").count == 2, "one notification from each app's history")

        // --app NAME sweeps one app; a name that is no app is refused.
        let alphaAsked = alpha.served.count, betaAsked = beta.served.count
        let one = try await fixture.cli(["sweep", "--app", "beta"])
        #expect(one.status == 0 && one.stderr.contains("TXRECON_APP=beta") || one.stderr.contains("beta: sweep"),
                "\(one.stderr)")
        #expect(alpha.served.count == alphaAsked && beta.served.count > betaAsked, "only beta's stand-in was asked")
        let none = try await fixture.cli(["sweep", "--app", "gamma"])
        #expect(none.status == 78 && none.stderr.contains("the apps are alpha, beta"), "\(none.stderr)")
        let status = try await fixture.cli(["status"])
        #expect(status.stdout.contains("sweep of alpha:") && status.stdout.contains("sweep of beta:"), "\(status.stdout)")
    }
}
