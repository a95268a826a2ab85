// The built `txrecon import` against the App Store Server API stand-in
// (Get All Subscription Statuses, Get Transaction History v2 paged by
// revision; every answer signed afresh with the test PKI), on a spool whose
// ledger the real daemon wrote.
import FoundationEssentials
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(3)))
struct ImportIntegrationTests {
    /// Customer 7300: three transactions (two pages of history), the last the
    /// subscription's latest, with its renewal info in the status answer.
    static func customer7300(_ fixture: ReconcileFixture) -> [JSONValue] {
        let history = [
            ReconcileFixture.transaction("4001", original: "4001", customer: "7300", expiresIn: -40 * 86_400_000),
            ReconcileFixture.transaction("4002", original: "4001", customer: "7300", expiresIn: -10 * 86_400_000),
            ReconcileFixture.transaction("4003", original: "4001", customer: "7300", expiresIn: 20 * 86_400_000),
        ]
        fixture.api.setHistory(["7300", "4001"], transactions: history)
        fixture.api.setCustomer(["7300", "4001"], subscriptions: [
            .init(originalTransactionId: "4001", transaction: history[2], renewalInfo: ReconcileFixture.renewal("4001")),
        ])
        return history
    }

    /// Customer 7301: one transaction, no subscription.
    /// Runs `txrecon import` of `input` until the stand-in holds the
    /// request it was told to hold (`what` says which), then SIGKILLs it
    /// and lets the request go.
    static func killImport(of input: String, in fixture: ReconcileFixture, once what: Comment) async {
        do {
            let process = try DaemonProcess(["import", "--config", fixture.daemon.configPath, input],
                                            stderrPath: fixture.daemon.directory.path + "/killed.err")
            #expect(fixture.api.waitUntilHolding(timeout: .seconds(60)), what)
            process.signal(SIGKILL)
            #expect(await process.wait(timeout: .seconds(20)) != nil)
        } catch {
            Issue.record("txrecon import did not start: \(error)")
        }
        fixture.api.releaseHeldRequest()
    }

    /// Customers 7300 and 7301 in customers.txt, and an import of it killed
    /// while 7300's second history page was asked for; the input's path.
    static func importKilledAtTheSecondPage(_ fixture: ReconcileFixture) async -> String {
        _ = customer7300(fixture)
        customer7301(fixture)
        let input = fixture.daemon.directory.write("7300\n7301\n", to: "customers.txt")
        // Requests: 7300's status, its history's first page, its second page (held).
        fixture.api.holdStatusRequest(3)
        await killImport(of: input, in: fixture, once: "the second page was asked for")
        return input
    }

    static func customer7301(_ fixture: ReconcileFixture) {
        fixture.api.setHistory(["7301"], transactions: [
            ReconcileFixture.transaction("4101", original: "4101", customer: "7301", expiresIn: -100 * 86_400_000),
        ])
    }

    /// Customer 7300 as above, but Apple's status answer for it forged.
    static func customer7300WithAForgedStatus(_ fixture: ReconcileFixture) {
        let history = customer7300(fixture)
        fixture.api.setCustomer(["7300"], subscriptions: [
            .init(originalTransactionId: "4001", transaction: history[2], forged: true),
        ])
    }

    @Test func eachCustomersHistoryIsDeliveredOnceAndTheFirstReconcileAfterFindsNothingChanged() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let history = Self.customer7300(fixture)
        // The backend has the first purchase already.
        try await fixture.deliver(history[0], renewal: nil)
        let input = fixture.daemon.directory.write("# customers of the live app\n7300\n\n", to: "customers.txt")
        let run = try await fixture.daemon.cli(["import", input])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("1 of 1 customers imported (0 unknown to Apple, 0 answers refused, 0 failed), "
                                    + "3 transactions: 1 confirmed already, 2 spooled"), "\(run.stderr)")
        #expect(fixture.api.problems == [])
        #expect(fixture.api.historyRequests.map(\.revision).count == 2, "two pages")
        #expect(fixture.api.historyRequests.last?.revision != nil, "the second page asked by revision")
        #expect(await fixture.daemon.eventually { fixture.confirmed(ItemKey("4002")!) && fixture.confirmed(ItemKey("4003")!) })
        let latest = try #require(fixture.daemon.server.requests.first {
            $0.header("Idempotency-Key")?.hasPrefix("4003:") == true
        })
        #expect(try JSONValue.parse(latest.body)["signedRenewalInfo"] != nil,
                "the subscription's latest transaction goes with its renewal info")
        #expect(!fixture.daemon.names("reconcile").contains("import-checkpoint"), "a finished import leaves none")

        let reconcile = try await fixture.reconcile("--all")
        #expect(reconcile.stderr.contains("1 in agreement, 0 changed"), "\(reconcile.stderr)")
        let again = try await fixture.daemon.cli(["import", input])
        #expect(again.stderr.contains("3 transactions: 3 confirmed already, 0 spooled"), "\(again.stderr)")
    }

    @Test func aDryRunListsWhatTheBackendLacksAndSpoolsNothing() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let history = Self.customer7300(fixture)
        try await fixture.deliver(history[0], renewal: nil)
        fixture.stopDaemon()
        let input = fixture.daemon.directory.write("7300\n", to: "customers.txt")
        let run = try await fixture.daemon.cli(["import", "--dry-run", input])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines.contains { $0.contains("transactionId 4002") }
                && lines.contains { $0.contains("transactionId 4003") }, "\(run.stdout)")
        #expect(try fixture.spooledTransactions() == [])
        #expect(!fixture.daemon.names("reconcile").contains("import-checkpoint"))
    }

    @Test func anImportKilledMidwayGoesOnFromItsCheckpointWithTheSameRevision() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        try await fixture.deliver(ReconcileFixture.transaction("3999", original: "3999", customer: "7999",
                                                               expiresIn: 0), renewal: nil)
        fixture.stopDaemon()
        let input = await Self.importKilledAtTheSecondPage(fixture)
        #expect(try fixture.spooledTransactions() == ["4001", "4002"], "the first page, durable before the kill")
        let held = try #require(fixture.api.historyRequests.last?.revision)
        let status = try await fixture.daemon.cli(["status"])
        #expect(status.stdout.contains("import:   unfinished: goes on with id number 1 of its input when run again"),
                "\(status.stdout)")

        let rerun = try await fixture.daemon.cli(["import", input])
        #expect(rerun.status == 0, "stderr: \(rerun.stderr)")
        #expect(rerun.stderr.contains("going on at \(input):1"), "\(rerun.stderr)")
        let requests = fixture.api.historyRequests.dropFirst(2)
        #expect(requests.map(\.id) == ["7300", "7301"], "the page after the last one durable, then 7301")
        #expect(requests.first?.revision == held, "the same revision as the killed run asked with")
        #expect(try fixture.spooledTransactions() == ["4001", "4002", "4003", "4101"])
    }

    @Test func aForgedAnswerIsNeverSpooledAndTheOtherCustomersAreImported() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        fixture.stopDaemon()
        Self.customer7300WithAForgedStatus(fixture)
        Self.customer7301(fixture)
        let input = fixture.daemon.directory.write("7300\n7301\n", to: "customers.txt")
        let run = try await fixture.daemon.cli(["import", input])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("refused an answer for 7300 (\(input):1): invalid-signature"), "\(run.stderr)")
        #expect(run.stderr.contains("1 of 2 customers imported (0 unknown to Apple, 1 answers refused, 0 failed)"),
                "\(run.stderr)")
        #expect(try fixture.spooledTransactions() == ["4101"], "nothing of the customer with a forged answer")
    }

    @Test func aRefusalBeforeAKillStillFailsTheRunThatGoesOn() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        fixture.stopDaemon()
        Self.customer7300WithAForgedStatus(fixture)
        Self.customer7301(fixture)
        let input = fixture.daemon.directory.write("7300\n7301\n", to: "customers.txt")
        // Requests: 7300's status (forged: refused), 7301's status (unknown),
        // 7301's history (held, then the import is killed).
        fixture.api.holdStatusRequest(3)
        await Self.killImport(of: input, in: fixture, once: "7301's history was asked for")
        let rerun = try await fixture.daemon.cli(["import", input])
        #expect(rerun.status == 1, "the refusal before the kill still counts: \(rerun.stderr)")
        #expect(rerun.stderr.contains("going on at \(input):2") && rerun.stderr.contains("1 answers refused"),
                "\(rerun.stderr)")
        #expect(try fixture.spooledTransactions() == ["4101"])
    }

    @Test func aCustomerAppleKeepsAskingToRetryFailsAloneAndTheOthersAreImported() async throws {
        // Run in this process on a clock whose sleeps return at once: the
        // seven answers are waited out by the rate limiter's backoff.
        let clock = ManualSweepClock(wallMilliseconds: WallTime.nowMilliseconds)
        let fixture = try ReconcileFixture(now: { clock.wallMilliseconds })
        try await fixture.daemon.start()
        fixture.stopDaemon()
        _ = Self.customer7300(fixture)
        Self.customer7301(fixture)
        fixture.api.inject(.refused(404, errorCode: 4_040_006), .refused(404, errorCode: 4_040_006),
                           .refused(404, errorCode: 4_040_006), .refused(404, errorCode: 4_040_006),
                           .refused(404, errorCode: 4_040_006), .refused(404, errorCode: 4_040_006),
                           .refused(404, errorCode: 4_040_006))
        let input = fixture.daemon.directory.write("7300\n7301\n", to: "customers.txt")
        let loaded = try ConfigurationLoader.load(path: fixture.daemon.configPath)
        let configuration = loaded.apps.first.map(loaded.settings(for:)) ?? loaded
        let log = RecordingLogSink()
        let status = ImportRun.perform(configuration: configuration, environment: [:], input: .ids(path: input),
                                       listing: nil, clock: clock, log: log)
        let text = log.entries.map(\.message).joined(separator: "\n")
        #expect(status == 1, "\(text)")
        #expect(text.contains("1 of 2 customers imported (0 unknown to Apple, 0 answers refused, 1 failed)"), "\(text)")
        #expect(text.contains("7300 (\(input):1): Apple kept asking to retry"), "\(text)")
        #expect(try fixture.spooledTransactions() == ["4101"], "the customer after the stuck one")
        #expect(!fixture.daemon.names("reconcile").contains("import-checkpoint"), "no run starts at 7300 again")
    }

    @Test func aHistoryAppleDoesNotKnowKeepsTheSubscriptionsItAnsweredAndFailsTheCustomer() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        fixture.stopDaemon()
        fixture.answer("4401", latest: "4401", customer: "7400")
        fixture.api.setCustomer(["7400"], subscriptions: [
            .init(originalTransactionId: "4401",
                  transaction: ReconcileFixture.transaction("4401", original: "4401", customer: "7400",
                                                            expiresIn: 86_400_000),
                  renewalInfo: ReconcileFixture.renewal("4401")),
        ])
        let input = fixture.daemon.directory.write("7400\n", to: "customers.txt")
        let run = try await fixture.daemon.cli(["import", input])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("does not know its transaction history"), "\(run.stderr)")
        #expect(run.stderr.contains("0 unknown to Apple, 0 answers refused, 1 failed"), "\(run.stderr)")
        #expect(try fixture.spooledTransactions() == ["4401"], "the verified status answer is not thrown away")
    }

    @Test func aRevisionRefusedOnResumeReadsThatCustomersHistoryFromItsFirstPage() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        fixture.stopDaemon()
        let input = await Self.importKilledAtTheSecondPage(fixture)
        let held = try #require(fixture.api.historyRequests.last?.revision)
        // A revision Apple no longer takes (saved long ago, or expired).
        let checkpoint = fixture.daemon.layout.root + "/reconcile/import-checkpoint"
        let saved = String(decoding: try SystemCall.readFile(checkpoint, limit: 1 << 16), as: UTF8.self)
        #expect(saved.contains(held))
        _ = fixture.daemon.directory.write(saved.replacingOccurrences(of: held, with: "rev-stale"),
                                           to: "spool/reconcile/import-checkpoint")
        let rerun = try await fixture.daemon.cli(["import", input])
        #expect(rerun.status == 0, "stderr: \(rerun.stderr)")
        #expect(rerun.stderr.contains("reading its history from the first page again"), "\(rerun.stderr)")
        let requests = fixture.api.historyRequests.dropFirst(2)
        #expect(requests.map(\.id) == ["7300", "7300", "7300", "7301"], "\(requests)")
        #expect(requests.map(\.revision).prefix(2) == ["rev-stale", nil])
        // The first page comes twice (signed afresh): the later copy supersedes.
        #expect(Set(try fixture.spooledTransactions()) == ["4001", "4002", "4003", "4101"])
    }

    @Test func aLineThatIsNoIdRefusesTheInputBeforeAnyRequest() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        fixture.stopDaemon()
        let input = fixture.daemon.directory.write("7300\norder MQ8B2K1ZX2\n", to: "customers.txt")
        let run = try await fixture.daemon.cli(["import", input])
        #expect(run.status == 1)
        #expect(run.stderr.contains("customers.txt:2: \"order MQ8B2K1ZX2\" is not an id"), "\(run.stderr)")
        #expect(fixture.api.statusRequests.isEmpty)
    }

    @Test func storedReceiptsAreVerifiedOfflineAndTheirCustomersImported() async throws {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        fixture.stopDaemon()
        _ = Self.customer7300(fixture)
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [
            TestReceipt.Purchase(transactionId: "4001"), TestReceipt.Purchase(transactionId: "4002"),
        ].map { purchase in
            var purchase = purchase
            purchase.originalTransactionId = "4001"
            return purchase
        }))
        var forged = TestReceipt.sign(TestReceipt.payload(purchases: [TestReceipt.Purchase(transactionId: "4101")]))
        forged[forged.count / 2] ^= 0x01
        _ = fixture.daemon.directory.write(Data(receipt).base64EncodedString(), to: "receipts/a-receipt")
        _ = fixture.daemon.directory.write(Data(forged).base64EncodedString(), to: "receipts/b-forged")
        let run = try await fixture.daemon.cli(["import", "--receipts", fixture.daemon.directory.path + "/receipts"])
        #expect(run.status == 1, "one receipt refused: \(run.stderr)")
        #expect(run.stderr.contains("refused the receipt") && run.stderr.contains("b-forged"), "\(run.stderr)")
        #expect(run.stderr.contains("1 of 1 customers imported"), "\(run.stderr)")
        #expect(fixture.api.historyRequests.map(\.id).first == "4001", "the receipt's originalTransactionId, once")
        #expect(try fixture.spooledTransactions() == ["4001", "4002", "4003"])
    }
}
