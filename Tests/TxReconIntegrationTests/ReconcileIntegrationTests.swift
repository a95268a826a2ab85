// The built `txrecon reconcile` against the App Store Server API stand-in
// (MockAppStoreServerAPI: Get All Subscription Statuses, every answer signed
// afresh with the test PKI), on a spool whose ledger the real daemon wrote
// by delivering the customers' earlier snapshots to a loopback backend.
// Real clocks; the tests wait for events (deliveries, ledger rows, a held
// request), never for a fixed time.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

/// A daemon verifying with the test PKI, a stand-in for Apple's API, and the
/// subscriptions it has delivered so far.
final class ReconcileFixture {
    static let bundleID = "com.example.app"
    let api: MockAppStoreServerAPI
    let daemon: DaemonFixture

    /// `extraConfig`: sections added before [Metrics] (AnswerFixture's [Outbox]);
    /// `now`: the stand-in's wall clock (a run in this process with a
    /// ManualSweepClock gives that clock's).
    init(extraConfig: String = "", now: @escaping @Sendable () -> Int64 = { WallTime.nowMilliseconds }) throws {
        let key = TestSigningKey()
        api = try MockAppStoreServerAPI(identity: MockAppStoreServerAPI.Identity(key: key), entries: [], now: now)
        daemon = try DaemonFixture()
        let keyPath = daemon.directory.write(key.pkcs8PEM, to: "appstore-key.p8", mode: 0o600)
        _ = daemon.directory.write("", to: "metrics/.keep")
        try daemon.writeConfig(api.sweepSection(privateKeyFile: keyPath) + "\nMaxRequestsPerSecond=50\n" + extraConfig
                               + "\n[Metrics]\n"
                               + "TextfileDirectory=\(daemon.directory.path)/metrics",
                               verification: """
                                   [Verification]
                                   BundleID=\(Self.bundleID)
                                   Environment=Sandbox
                                   RootCertificateFile=\(TestPKI.path("root"))
                                   ReceiptRootCertificateFile=\(TestReceipt.path("root"))
                                   """)
        try daemon.layout.createMissingDirectories()
    }

    /// A subscription's transaction payload: `expiresIn` ms from now.
    static func transaction(_ id: String, original: String, customer: String, expiresIn: Int64,
                            revoked: Bool = false) -> JSONValue {
        TestJWS.transactionPayload(transactionId: id, originalTransactionId: original, bundleId: bundleID,
                                   signedDate: TestPKI.insideLeafValidity,
                                   revocationDate: revoked ? TestPKI.insideLeafValidity : nil,
                                   extra: [("expiresDate", .integer(WallTime.nowMilliseconds + expiresIn)),
                                           ("appTransactionId", .string(customer))])
    }

    static func renewal(_ original: String, autoRenew: Int64 = 1) -> JSONValue {
        TestJWS.renewalInfoPayload(originalTransactionId: original, signedDate: TestPKI.insideLeafValidity)
            .merging([("autoRenewStatus", .integer(autoRenew))])
    }

    /// Drops `transaction` with `renewal` as an app's upload (format 3),
    /// signed with the test PKI, and waits until the ledger holds it.
    func deliver(_ transaction: JSONValue, renewal: JSONValue?) async throws {
        let upload = TestDrop.transactionUpload(TestPKI.sign(payload: transaction),
                                                renewal: renewal.map { TestPKI.sign(payload: $0) })
        try Submission(layout: daemon.layout).drop(upload)
        let id = transaction["transactionId"]?.stringValue ?? ""
        let key = try #require(ItemKey(id))
        #expect(await daemon.eventually { self.confirmed(key) }, "the daemon delivered \(id)")
    }

    /// Whether the ledger holds a confirmation of `key`.
    func confirmed(_ key: ItemKey) -> Bool {
        (try? SQLiteLedger(path: daemon.ledgerPath, access: .readOnly).records(of: key).isEmpty) == false
    }

    /// The transaction ids of the drops waiting in new/ (the daemon stopped).
    func spooledTransactions() throws -> [String] {
        try daemon.names("new").map { name in
            let bytes = try SystemCall.readFile(daemon.layout.new + "/" + name, limit: 1 << 20)
            guard case .item(let item) = try InputDecoder().decode(bytes) else { return "(not an item)" }
            return item.key.rawValue
        }.sorted()
    }

    /// Apple answers for `original` with one subscription whose latest
    /// transaction is `transaction` (`expiresIn` ms from now), forged or not.
    func answer(_ original: String, latest transaction: String, customer: String, expiresIn: Int64 = 86_400_000,
                forged: Bool = false) {
        api.setCustomer([original], subscriptions: [
            .init(originalTransactionId: original,
                  transaction: Self.transaction(transaction, original: original, customer: customer,
                                                expiresIn: expiresIn),
                  forged: forged),
        ])
    }

    /// Two customers (3000 of 7004, 3010 of 7005) delivered with
    /// subscriptions that expired two hours ago, each renewed since at
    /// Apple (3401, 3411): 3000's answer forged. The daemon stopped.
    static func twoRenewedCustomersTheFirstForged() async throws -> ReconcileFixture {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        for (customer, original, latest) in [("7004", "3000", "3400"), ("7005", "3010", "3410")] {
            try await fixture.deliver(transaction(latest, original: original, customer: customer, expiresIn: -7_200_000),
                                      renewal: renewal(original))
        }
        fixture.stopDaemon()
        fixture.answer("3000", latest: "3401", customer: "7004", forged: true)
        fixture.answer("3010", latest: "3411", customer: "7005")
        return fixture
    }

    /// Two customers (3000 of `first`, 3010 of `second`) delivered with
    /// subscriptions that expired two hours ago, each renewed since at
    /// Apple (3401, 3411); the daemon stopped. For a run in this process on
    /// `clock`: the fixture, and its one app's settings.
    static func twoRenewedCustomers(_ first: String, _ second: String,
                                    clock: ManualSweepClock) async throws -> (ReconcileFixture, Configuration) {
        let fixture = try ReconcileFixture(now: { clock.wallMilliseconds })
        try await fixture.daemon.start()
        for (customer, original, latest) in [(first, "3000", "3400"), (second, "3010", "3410")] {
            try await fixture.deliver(transaction(latest, original: original, customer: customer, expiresIn: -7_200_000),
                                      renewal: nil)
        }
        fixture.stopDaemon()
        fixture.answer("3000", latest: "3401", customer: first)
        fixture.answer("3010", latest: "3411", customer: second)
        let loaded = try ConfigurationLoader.load(path: fixture.daemon.configPath)
        return (fixture, loaded.apps.first.map(loaded.settings(for:)) ?? loaded)
    }

    func reconcile(_ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await daemon.cli(["reconcile"] + arguments)
    }

    func stopDaemon() {
        daemon.daemon?.terminate()
    }
}

@Suite(.serialized, .timeLimit(.minutes(3)))
struct ReconcileIntegrationTests {
    @Test func aRenewalAppleNeverNotifiedIsSpooledDeliveredAndThenAgrees() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        // Expired two hours ago as far as anyone told txrecon: due for its
        // first expiry check. Apple renewed it without a notification.
        try await fixture.deliver(ReconcileFixture.transaction("3100", original: "3000", customer: "7001",
                                                               expiresIn: -7_200_000),
                                  renewal: ReconcileFixture.renewal("3000"))
        let renewed = ReconcileFixture.transaction("3101", original: "3000", customer: "7001",
                                                   expiresIn: 30 * 86_400_000)
        fixture.api.setCustomer(["3000", "3100", "3101", "7001"], subscriptions: [
            .init(originalTransactionId: "3000", transaction: renewed, renewalInfo: ReconcileFixture.renewal("3000")),
        ])
        let run = try await fixture.reconcile()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("1 of 1 customers due checked"), "\(run.stderr)")
        #expect(run.stderr.contains("0 in agreement, 1 changed and spooled"), "\(run.stderr)")
        #expect(fixture.api.problems == [])
        #expect(await fixture.daemon.eventually {
            fixture.daemon.server.requests.contains { $0.header("Idempotency-Key")?.hasPrefix("3101:") == true }
        }, "the renewal reached the backend")
        #expect(await fixture.daemon.eventually { fixture.confirmed(ItemKey("3101")!) })
        let delivered = fixture.daemon.server.requests.count

        // Asked again (Apple signs afresh: a new signedDate), nothing changed.
        let again = try await fixture.reconcile("--all")
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(again.stderr.contains("1 in agreement, 0 changed and spooled"), "\(again.stderr)")
        #expect(fixture.api.statusRequests.count == 2)
        #expect(fixture.daemon.names("new").isEmpty && fixture.daemon.server.requests.count == delivered)

        let status = try await fixture.daemon.cli(["status"])
        #expect(status.stdout.contains("reconcile: ") && status.stdout.contains("1 in agreement"), "\(status.stdout)")
        let metrics = String(decoding: try SystemCall.readFile(fixture.daemon.directory.path
                                                               + "/metrics/txrecon-reconcile.prom", limit: 65536),
                             as: UTF8.self)
        #expect(metrics.contains("txrecon_reconcile_last_run_subscriptions{outcome=\"agreed\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("txrecon_reconcile_last_run_success 1\n"))
        #expect(metrics.contains("txrecon_reconcile_last_run_customers{stage=\"checked\"} 1\n"))

        // Under the units' UMask=0007 too, node_exporter (another user) can read it.
        let path = fixture.daemon.directory.path + "/metrics/txrecon-reconcile.prom"
        #expect(unlink(path) == 0)
        let process = try DaemonProcess(command: ["/bin/sh", "-c", "umask 0007 && exec \"$0\" \"$@\"", DaemonProcess.binary,
                                                  "reconcile", "--all", "--config", fixture.daemon.configPath],
                                        stderrPath: fixture.daemon.directory.path + "/umask.err")
        #expect(await process.wait(timeout: .seconds(60)) == 0, "\(process.stderr)")
        #expect(try SystemCall.linkStatus(path).map { $0.st_mode & 0o777 } == 0o644)
    }

    /// With several apps the metrics file is the whole run's: an app that
    /// stopped at start-up (its key missing) after one that completed
    /// makes it read failure, as the exit status does.
    @Test func theMetricsFileOfARunThroughSeveralAppsReadsFailureWhenOneStoppedAtStartUp() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let transaction = ReconcileFixture.transaction("3950", original: "3000", customer: "7012",
                                                       expiresIn: -7_200_000)
        try await fixture.deliver(transaction, renewal: nil)
        fixture.stopDaemon()
        fixture.api.setCustomer(["3000"], subscriptions: [.init(originalTransactionId: "3000", transaction: transaction)])
        _ = fixture.daemon.directory.write("[Verification]\nBundleID=com.example.other\n[Sweep]\n"
                                           + "PrivateKeyFile=\(fixture.daemon.directory.path)/missing.p8\n",
                                           to: "apps/other.conf")
        let run = try await fixture.reconcile()
        #expect(run.status == 78, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("1 of 1 customers due checked") && run.stderr.contains("missing.p8"),
                "main completed, other stopped: \(run.stderr)")
        let metrics = String(decoding: try SystemCall.readFile(fixture.daemon.directory.path
                                                               + "/metrics/txrecon-reconcile.prom", limit: 65536),
                             as: UTF8.self)
        #expect(metrics.contains("txrecon_reconcile_last_run_success 0\n"), "\(metrics)")
        #expect(metrics.contains("txrecon_reconcile_last_run_customers{stage=\"checked\"} 1\n"), "\(metrics)")
    }

    /// Apple failing (5xx) on one account past the backoffs fails that
    /// customer alone, left due, and the run goes on: one stopped there
    /// would stop there every hour and never ask the customers after it.
    @Test func aCustomerAppleKeepsFailingOnFailsAloneAndTheCustomerAfterItIsAsked() async throws {
        // Run in this process on a clock whose sleeps return at once: the
        // seven answers are waited out by the rate limiter's backoff.
        let clock = ManualSweepClock(wallMilliseconds: WallTime.nowMilliseconds)
        let (fixture, configuration) = try await ReconcileFixture.twoRenewedCustomers("7013", "7014", clock: clock)
        for _ in 0...RateLimiter.maximumBackoffs { fixture.api.inject(.serverError(503)) }
        let report = ReconcileRun.perform(configuration: configuration, environment: [:], all: false, listing: nil,
                                          clock: clock, log: RecordingLogSink())
        #expect(report.stop == nil && report.exitStatus == 1, "\(report.logEntry.message)")
        #expect(report.customers == 2 && report.failed == 1, "\(report.logEntry.message)")
        #expect(report.firstFailure?.contains("app:7013") == true, "\(report.logEntry.message)")
        #expect(fixture.api.statusRequests == Array(repeating: "3000", count: RateLimiter.maximumBackoffs + 1) + ["3010"])
        #expect(try fixture.spooledTransactions() == ["3411"], "the customer after the failing one")
    }

    /// An app whose turn of the run is spent asks no further customer: the
    /// run stops as temporary, and the customers left are still due, asked
    /// by the next run (here one without a deadline).
    @Test func anAppWhoseTurnIsSpentStopsAndLeavesItsCustomersDue() async throws {
        let clock = ManualSweepClock(wallMilliseconds: WallTime.nowMilliseconds)
        let (fixture, configuration) = try await ReconcileFixture.twoRenewedCustomers("7015", "7016", clock: clock)
        let spent = ReconcileRun.perform(configuration: configuration, environment: [:], all: false, listing: nil,
                                         clock: clock, deadline: clock.now, log: RecordingLogSink())
        #expect(spent.stop?.kind == .temporary && spent.exitStatus == 75, "\(spent.logEntry.message)")
        #expect(spent.stop?.reason.contains("the 2 customers left") == true, "\(spent.logEntry.message)")
        #expect(spent.customers == 0 && fixture.api.statusRequests.isEmpty)
        let next = ReconcileRun.perform(configuration: configuration, environment: [:], all: false, listing: nil,
                                        clock: clock, log: RecordingLogSink())
        #expect(next.stop == nil && next.customers == 2, "\(next.logEntry.message)")
        #expect(try fixture.spooledTransactions() == ["3401", "3411"])
    }

    /// A wall clock once far ahead recorded the check and the first run a
    /// year from now; taken as they are, they would keep the customer out
    /// of every check for that year.
    @Test func marksRecordedByAClockFarAheadCountAsNone() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let transaction = ReconcileFixture.transaction("3960", original: "3000", customer: "7015",
                                                       expiresIn: -7_200_000)
        try await fixture.deliver(transaction, renewal: nil)
        fixture.stopDaemon()
        fixture.api.setCustomer(["3000"], subscriptions: [.init(originalTransactionId: "3000", transaction: transaction)])
        let first = try await fixture.reconcile()
        #expect(first.status == 0 && first.stderr.contains("1 of 1 customers due checked"), "\(first.stderr)")
        let state = try SQLiteDatabase(path: ReconcileStateDirectory.path(of: fixture.daemon.layout) + "/state.sqlite3",
                                       access: .readWriteCreate)
        try state.execute("UPDATE checked SET checked_at = checked_at + 365 * 86400000")
        try state.execute("UPDATE marks SET value = value + 365 * 86400000 WHERE name = 'first-run'")
        let ahead = try await fixture.reconcile()
        #expect(ahead.status == 0 && ahead.stderr.contains("1 of 1 customers due checked"),
                "its first expiry check, as if never checked: \(ahead.stderr)")
        let next = try await fixture.reconcile()
        #expect(next.stderr.contains("0 of 0 customers due checked"), "a true time recorded: \(next.stderr)")
        #expect(fixture.api.statusRequests == ["3000", "3000"])
    }

    @Test func aSubscriptionSignedAfreshButUnchangedSpoolsNothingAndIsNotDueAgain() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let transaction = ReconcileFixture.transaction("3200", original: "3000", customer: "7002",
                                                       expiresIn: -7_200_000)
        try await fixture.deliver(transaction, renewal: ReconcileFixture.renewal("3000", autoRenew: 0))
        fixture.stopDaemon()
        fixture.api.setCustomer(["3000"], subscriptions: [
            .init(originalTransactionId: "3000", status: 2, transaction: transaction,
                  renewalInfo: ReconcileFixture.renewal("3000", autoRenew: 0)),
        ])
        let run = try await fixture.reconcile()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("1 of 1 customers due checked"), "\(run.stderr)")
        #expect(run.stderr.contains("1 in agreement, 0 changed"), "\(run.stderr)")
        #expect(try fixture.spooledTransactions() == [])

        // Checked after its first expiry check: not due until the second (+25 h).
        let next = try await fixture.reconcile()
        #expect(next.status == 0 && next.stderr.contains("0 of 0 customers due checked"), "\(next.stderr)")
        #expect(fixture.api.statusRequests == ["3000"])
    }

    @Test func aChangedRenewalInfoAloneIsAChange() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let transaction = ReconcileFixture.transaction("3300", original: "3000", customer: "7003",
                                                       expiresIn: 20 * 86_400_000)
        try await fixture.deliver(transaction, renewal: ReconcileFixture.renewal("3000", autoRenew: 1))
        fixture.stopDaemon()
        // The customer turned auto-renew off; the notification was lost.
        fixture.api.setCustomer(["3000"], subscriptions: [
            .init(originalTransactionId: "3000", transaction: transaction,
                  renewalInfo: ReconcileFixture.renewal("3000", autoRenew: 0)),
        ])
        let dry = try await fixture.reconcile("--all", "--dry-run")
        #expect(dry.status == 0, "stderr: \(dry.stderr)")
        #expect(dry.stdout.contains("transactionId 3300") && dry.stdout.contains("renewal info differs"), "\(dry.stdout)")
        #expect(try fixture.spooledTransactions() == [], "a dry run spools nothing")
        let run = try await fixture.reconcile("--all")
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try fixture.spooledTransactions() == ["3300"])
    }

    @Test func aGapMakesEverySubscriptionLiveInItDueAndASettledGapIsRemoved() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let transaction = ReconcileFixture.transaction("3250", original: "3000", customer: "7009",
                                                       expiresIn: 20 * 86_400_000)
        try await fixture.deliver(transaction, renewal: nil)
        fixture.stopDaemon()
        fixture.api.setCustomer(["3000"], subscriptions: [.init(originalTransactionId: "3000", transaction: transaction)])
        let all = try await fixture.reconcile("--all")
        #expect(all.status == 0 && all.stderr.contains("1 in agreement"), "\(all.stderr)")
        let quiet = try await fixture.reconcile()
        #expect(quiet.stderr.contains("0 of 0 customers due checked"), "checked a moment ago: \(quiet.stderr)")

        // The receiver refused a notification this hour; the sweep found
        // notifications Apple could not deliver an hour before the --all run.
        let now = WallTime.nowMilliseconds
        let current = ReconcileGaps.receiverGap(at: now)
        let settled = ReconcileGap(source: "sweep", from: now - 7_200_000, to: now - 3_600_000)
        try ReconcileGaps.report(current, layout: fixture.daemon.layout)
        try ReconcileGaps.report(settled, layout: fixture.daemon.layout)
        let run = try await fixture.reconcile()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("1 of 1 customers due checked"), "live in this hour's gap: \(run.stderr)")
        #expect(fixture.api.statusRequests == ["3000", "3000"])
        #expect(ReconcileGaps.read(layout: fixture.daemon.layout) == [current],
                "the gap that ended before the run is settled; this hour's stays until it has ended")
    }

    /// A gap makes every live subscription due, hours of requests on a
    /// large app; a customer whose subscription lapsed an hour ago is asked
    /// first, wherever the ledger's order puts it.
    @Test func anExpiryCheckIsAskedBeforeAGapsCustomersWhateverTheirOrder() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let live = ReconcileFixture.transaction("3250", original: "3000", customer: "7001", expiresIn: 20 * 86_400_000)
        let lapsed = ReconcileFixture.transaction("3450", original: "3010", customer: "7099", expiresIn: -7_200_000)
        try await fixture.deliver(live, renewal: nil)
        try await fixture.deliver(lapsed, renewal: nil)
        fixture.stopDaemon()
        fixture.api.setCustomer(["3000"], subscriptions: [.init(originalTransactionId: "3000", transaction: live)])
        fixture.api.setCustomer(["3010"], subscriptions: [.init(originalTransactionId: "3010", transaction: lapsed)])
        try ReconcileGaps.report(ReconcileGaps.receiverGap(at: WallTime.nowMilliseconds), layout: fixture.daemon.layout)
        let run = try await fixture.reconcile()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("2 of 2 customers due checked"), "\(run.stderr)")
        #expect(fixture.api.statusRequests == ["3010", "3000"], "the lapsed one (app:7099) first")
    }

    /// A customer whose answer keeps being refused holds back the gaps it
    /// was live in, and only those: the others are settled and removed, so
    /// that gaps/ does not grow for as long as it fails.
    @Test func aCustomerLeftDueKeepsOnlyTheGapsItWasLiveIn() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        // 3000 expired five hours ago; 3010 runs for another day.
        for (customer, original, transaction, expiresIn) in [("7004", "3000", "3400", Int64(-18_000_000)),
                                                              ("7005", "3010", "3410", Int64(86_400_000))] {
            try await fixture.deliver(ReconcileFixture.transaction(transaction, original: original, customer: customer,
                                                                   expiresIn: expiresIn),
                                      renewal: ReconcileFixture.renewal(original))
        }
        fixture.stopDaemon()
        fixture.answer("3000", latest: "3400", customer: "7004", expiresIn: -18_000_000, forged: true)
        fixture.answer("3010", latest: "3410", customer: "7005")
        let now = WallTime.nowMilliseconds
        let bothLive = ReconcileGap(source: "sweep", from: now - 8 * 3_600_000, to: now - 7 * 3_600_000)
        let onlyTheGenuine = ReconcileGap(source: "sweep", from: now - 2 * 3_600_000, to: now - 3_600_000)
        try ReconcileGaps.report(bothLive, layout: fixture.daemon.layout)
        try ReconcileGaps.report(onlyTheGenuine, layout: fixture.daemon.layout)
        let run = try await fixture.reconcile()
        #expect(run.status == 1 && run.stderr.contains("1 answers refused"), "\(run.stderr)")
        #expect(ReconcileGaps.read(layout: fixture.daemon.layout) == [bothLive],
                "the gap the refused customer was live in stays; the other is settled")
    }

    @Test func aForgedAnswerIsNeverSpooledAndTheRunFailsNamingItAfterCheckingTheOthers() async throws {
        let fixture = try await ReconcileFixture.twoRenewedCustomersTheFirstForged()
        let run = try await fixture.reconcile()
        #expect(run.status == 1, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("invalid-signature") && run.stderr.contains("3000"), "\(run.stderr)")
        #expect(run.stderr.contains("2 of 2 customers due checked (0 unknown to Apple, 1 answers refused, 0 failed)"),
                "\(run.stderr)")
        #expect(try fixture.spooledTransactions() == ["3411"], "the forged one is never spooled, the other is")

        // The refused customer stays due: the next run asks again.
        _ = try await fixture.reconcile()
        #expect(fixture.api.statusRequests == ["3000", "3010", "3000"])
    }

    /// An --all run goes on from one that was stopped (here: killed), and
    /// says so; one that went through its customers, a refused one among
    /// them, leaves nothing to go on from; nor does one stopped longer ago
    /// than FullCycle=: an --all after an incident asks everyone.
    @Test func anAllRunGoesOnOnlyFromARecentOneThatStopped() async throws {
        let fixture = try await ReconcileFixture.twoRenewedCustomersTheFirstForged()
        let refused = try await fixture.reconcile("--all")
        #expect(refused.status == 1, "stderr: \(refused.stderr)")
        fixture.answer("3000", latest: "3401", customer: "7004")
        let again = try await fixture.reconcile("--all")
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(fixture.api.statusRequests == ["3000", "3010", "3000", "3010"],
                "the second --all asks everyone: the first went through its customers")
        #expect(!again.stderr.contains("going on with"), "\(again.stderr)")

        // Killed at its second request: the next --all goes on with the second customer only.
        fixture.api.holdStatusRequest(6)
        let process = try DaemonProcess(["reconcile", "--all", "--config", fixture.daemon.configPath],
                                        stderrPath: fixture.daemon.directory.path + "/killed.err")
        #expect(fixture.api.waitUntilHolding(timeout: .seconds(60)), "the second request arrived")
        process.signal(SIGKILL)
        #expect(await process.wait(timeout: .seconds(20)) != nil)
        fixture.api.releaseHeldRequest()
        let resumed = try await fixture.reconcile("--all")
        #expect(resumed.status == 0 && resumed.stderr.contains("going on with the --all run begun at"),
                "\(resumed.stderr)")
        #expect(Array(fixture.api.statusRequests.dropFirst(4)) == ["3000", "3010", "3010"])

        // The same kill, its mark then dated before FullCycle= (7 days): everyone again.
        fixture.api.holdStatusRequest(9)
        let killed = try DaemonProcess(["reconcile", "--all", "--config", fixture.daemon.configPath],
                                       stderrPath: fixture.daemon.directory.path + "/killed-again.err")
        #expect(fixture.api.waitUntilHolding(timeout: .seconds(60)))
        killed.signal(SIGKILL)
        #expect(await killed.wait(timeout: .seconds(20)) != nil)
        fixture.api.releaseHeldRequest()
        let state = try SQLiteDatabase(path: ReconcileStateDirectory.path(of: fixture.daemon.layout) + "/state.sqlite3",
                                       access: .readWriteCreate)
        try state.execute("UPDATE marks SET value = value - 8 * 86400000 WHERE name = 'all-started'")
        let stale = try await fixture.reconcile("--all")
        #expect(stale.status == 0 && !stale.stderr.contains("going on with"), "\(stale.stderr)")
        #expect(Array(fixture.api.statusRequests.dropFirst(7)) == ["3000", "3010", "3000", "3010"])
    }

    @Test func aCustomerAppleDoesNotKnowIsCountedAndTheRunCompletes() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        try await fixture.deliver(ReconcileFixture.transaction("3500", original: "3000", customer: "7006",
                                                               expiresIn: -7_200_000), renewal: nil)
        fixture.stopDaemon()
        let run = try await fixture.reconcile()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("(1 unknown to Apple, 0 answers refused, 0 failed)"), "\(run.stderr)")
        #expect(try fixture.spooledTransactions() == [])
    }

    @Test func aConfigurationThatChecksNoSignatureIsRefusedWith78() async throws {
        let fixture = try ReconcileFixture()
        try fixture.daemon.writeConfig(fixture.api.sweepSection(privateKeyFile: fixture.daemon.directory.path
                                                                    + "/appstore-key.p8"),
                                       verification: "[Verification]\nMode=none")
        for command in [["reconcile"], ["import", "-"], ["lookup", "MQ8B2K1ZX2"]] {
            let run = try await fixture.daemon.cli(command)
            #expect(run.status == 78, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("does not check signatures for [Sweep] Environment=Sandbox"), "\(run.stderr)")
        }
        #expect(fixture.api.statusRequests.isEmpty && fixture.daemon.names("new").isEmpty)
    }

    @Test func aDryRunLeavesNoStateBehind() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        try await fixture.deliver(ReconcileFixture.transaction("3650", original: "3000", customer: "7010",
                                                               expiresIn: -7_200_000), renewal: nil)
        fixture.stopDaemon()
        let dry = try await fixture.reconcile("--dry-run")
        #expect(dry.status == 0 && dry.stderr.contains("1 of 1 customers due checked"), "\(dry.stderr)")
        #expect(fixture.daemon.names("reconcile").isEmpty,
                "run as root, a dry run must leave no file the unit's user could not open")
    }

    @Test func appleRefusingTheCredentialsExitsWith78() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        try await fixture.deliver(ReconcileFixture.transaction("3600", original: "3000", customer: "7007",
                                                               expiresIn: -7_200_000), renewal: nil)
        fixture.stopDaemon()
        fixture.api.refuseCredentials()
        let run = try await fixture.reconcile()
        #expect(run.status == 78, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("HTTP 401") && !run.stderr.contains("Bearer"), "\(run.stderr)")
    }

    @Test func aRateLimitWithAnEpochMillisecondRetryAfterIsWaitedOut() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let transaction = ReconcileFixture.transaction("3700", original: "3000", customer: "7008",
                                                       expiresIn: -7_200_000)
        try await fixture.deliver(transaction, renewal: nil)
        fixture.stopDaemon()
        fixture.api.setCustomer(["3000"], subscriptions: [
            .init(originalTransactionId: "3000",
                  transaction: ReconcileFixture.transaction("3701", original: "3000", customer: "7008",
                                                            expiresIn: 86_400_000)),
        ])
        // Apple's Retry-After: when to come back, in UNIX milliseconds.
        fixture.api.inject(.rateLimited(retryAfter: String(WallTime.nowMilliseconds + 1500)))
        let run = try await fixture.reconcile()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(fixture.api.statusRequests == ["3000", "3000"])
        #expect(try fixture.spooledTransactions() == ["3701"])
    }

    @Test func aRunKilledMidwayGoesOnWithTheCustomersItHadNotChecked() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        // Four customers, each renewed without a notification, asked in the
        // order of their appTransactionIds.
        for index in 0..<4 {
            let original = String(3000 + index * 10)
            try await fixture.deliver(ReconcileFixture.transaction(String(3800 + index * 10), original: original,
                                                                   customer: String(7100 + index),
                                                                   expiresIn: -7_200_000), renewal: nil)
            fixture.api.setCustomer([original], subscriptions: [
                .init(originalTransactionId: original,
                      transaction: ReconcileFixture.transaction(String(3801 + index * 10), original: original,
                                                                customer: String(7100 + index),
                                                                expiresIn: 86_400_000)),
            ])
        }
        fixture.stopDaemon()
        fixture.api.holdStatusRequest(3)
        let process = try DaemonProcess(["reconcile", "--config", fixture.daemon.configPath],
                                        stderrPath: fixture.daemon.directory.path + "/killed.err")
        #expect(fixture.api.waitUntilHolding(timeout: .seconds(60)), "the third request arrived")
        process.signal(SIGKILL)
        #expect(await process.wait(timeout: .seconds(20)) != nil)
        fixture.api.releaseHeldRequest()
        #expect(try fixture.spooledTransactions() == ["3801", "3811"], "the two customers checked before the kill")

        let rerun = try await fixture.reconcile()
        #expect(rerun.status == 0, "stderr: \(rerun.stderr)")
        #expect(fixture.api.statusRequests == ["3000", "3010", "3020", "3020", "3030"],
                "the run after the kill asks only for the customers not checked")
        #expect(try fixture.spooledTransactions() == ["3801", "3811", "3821", "3831"])
    }
}
