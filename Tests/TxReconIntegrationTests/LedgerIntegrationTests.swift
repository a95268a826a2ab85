// The built daemon with its ledger: the promises that broke once done/ was
// reaped (issue "txrecon remembers"), each tried as a hostile app user
// would: a pre-refund snapshot uploaded after the refund's done/ entry is
// gone, an envelope version going back, a receipt uploaded again, an older
// receipt uploaded after the subscription's renewal date was extended (and
// after an upgrade from a release that did not version the expiry); and
// `show` and `history` answering from the ledger after done/ is empty.
// done/ is emptied by hand while the daemon is stopped, as DoneReaper
// would after DoneRetention= (its own tests cover when it may).
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct LedgerIntegrationTests {
    /// Apple's real REFUND notification and the same transaction's signed
    /// snapshot from before the refund (its key 2000001032604840).
    static func realSample(_ hash: String) throws -> String {
        let sample = try #require(AppStoreSamples.real().first { $0.name.contains(hash) })
        return String(decoding: sample.bytes, as: UTF8.self).trimmingASCIISpaces()
    }

    static let refunded = "2000001032604840"

    /// Stops the daemon cleanly (the ledger is written), then empties done/
    /// as the reaper would once DoneRetention= passed.
    func forgetDone(_ fixture: DaemonFixture, _ daemon: DaemonProcess) async throws {
        daemon.signal(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(30)) == 0, "\(daemon.stderr)")
        for name in fixture.names("done") { unlink(fixture.layout.done + "/" + name) }
        #expect(fixture.names("done").isEmpty)
    }

    @Test func aPreRefundSnapshotUploadedAfterTheRefundsDoneEntryIsGoneIsNotDelivered() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("")
        let first = try await fixture.start()
        try fixture.drop(try Self.realSample("663e2eaa9570"), name: "refund")   // the REFUND notification
        try fixture.drop(fixture.envelope("order-5", version: 5), name: "order-v5")
        #expect(await fixture.eventually { fixture.server.requests.count == 2 }, "\(first.stderr)")
        try await forgetDone(fixture, first)

        let second = try await fixture.start()
        // The app still holds the purchase's snapshot from before the refund.
        try fixture.drop(try Self.realSample("38359170a7fc"), name: "pre-refund")
        try fixture.drop(fixture.envelope("order-5", version: 3), name: "order-v3")
        #expect(await fixture.eventually {
            fixture.names("done").filter { $0.contains(".superseded-") }.count == 2
        }, "\(fixture.names("done")) \(second.stderr)")
        #expect(fixture.server.requests.count == 2, "neither went out again")
        #expect(second.stderr.contains("\(Self.refunded): version 1760591941117 superseded"))
        // A newer version still goes out.
        try fixture.drop(fixture.envelope("order-5", version: 6), name: "order-v6")
        #expect(await fixture.eventually { fixture.server.requests.count == 3 })
    }

    @Test func showAndHistoryAnswerFromTheLedgerAfterDoneIsEmpty() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("")
        let daemon = try await fixture.start()
        try fixture.drop(try Self.realSample("663e2eaa9570"), name: "refund")
        // The same customer's other subscription (another product).
        try fixture.drop(try Self.realSample("fba03562bf71"), name: "other-product")
        #expect(await fixture.eventually { fixture.server.requests.count == 2 })
        try await forgetDone(fixture, daemon)

        let show = try await fixture.cli(["show", Self.refunded])
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("confirmed:  backend version 1760592122788r.1760592122788 at "))
        #expect(show.stdout.contains("attempt 1, HTTP 200, Idempotency-Key \(Self.refunded):1760592122788r.1760592122788"))

        let history = try await fixture.cli(["history", "--product-id", "com.getsession.org.pro_sub", "--json"])
        #expect(history.status == 0, "\(history.stderr)")
        let rows = try #require(try JSONValue.parse(Array(history.stdout.utf8)).arrayValue)
        #expect(rows.count == 1, "one product's: \(history.stdout)")
        let refund = try #require(rows.first)
        #expect(refund["id"]?.stringValue == Self.refunded && refund["notificationType"]?.stringValue == "REFUND")
        #expect(refund["versionToken"]?.stringValue == "1760592122788r.1760592122788")
        let originalId = try #require(refund["originalTransactionId"]?.stringValue)
        let customer = try await fixture.cli(["history", "--original-transaction-id", originalId])
        let lines = customer.stdout.split(separator: "\n")
        #expect(customer.status == 0 && lines.count == 2, "the customer's whole history: \(customer.stdout)")
        #expect(lines.contains { $0.contains("REFUND") && $0.contains("attempt 1 HTTP 200") })
        let check = try await fixture.cli(["check-config"])
        #expect(check.stdout.contains("LedgerFile=\(fixture.ledgerPath)") && check.stdout.contains("ledger: 2 rows"),
                "\(check.stdout)")
        let none = try await fixture.cli(["history", "--app-account-token", "00000000-0000-0000-0000-000000000000"])
        #expect(none.status == 0 && none.stdout.isEmpty && none.stderr.contains("no confirmation matches"))
    }

    @Test func statusShowsTheLedgerWhileTheDaemonRuns() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("")
        try await fixture.start()
        try fixture.drop(fixture.envelope("e1", version: 1))
        #expect(await fixture.eventually { fixture.server.requests.count == 1 })
        // The status file follows the daemon's publications: poll it.
        var output = ""
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            output = try await fixture.cli(["status"]).stdout
            if output.contains("ledger:   \(fixture.ledgerPath): ") && output.contains("up to date") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(output.contains("ledger:   \(fixture.ledgerPath): ") && output.contains("up to date"), "\(output)")
    }

    @Test func aReceiptUploadedAgainAfterDoneForgotItDeliversNothing() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: """
            [Verification]
            BundleID=dev.bonzer.weeka.app
            Environment=Production Sandbox
            AppAppleID=1234567890
            RootCertificateFile=\(DaemonIntegrationTests.repositoryRoot)/Config/AppleRootCA-G3.cer
            ReceiptRootCertificateFile=\(ReceiptSamples.shippedRoot)
            """)
        let upload = JSONValue.object([("receipt", .string(ReceiptSamples.base64(ReceiptIntegrationTests.real)))])
            .serializedString
        // Its purchases, and the receipt itself once (an item of its own).
        let items = ReceiptIntegrationTests.purchases.count + 1
        let first = try await fixture.start()
        try fixture.drop(upload)
        #expect(await fixture.eventually { fixture.server.requests.count == items })
        try await forgetDone(fixture, first)

        // Every item confirmed, as the ledger remembers: the upload is not
        // even split again (ReceiptSplitPlan asks the ledger before done/).
        let second = try await fixture.start()
        try fixture.drop(upload, name: "again")
        // The upload leaves new/ when it is set aside for its split, before
        // the split has looked at anything: its line says it is done.
        let skipped = "every item already confirmed or pending at its version (3 confirmed, 0 pending)"
        #expect(await fixture.eventually { second.stderr.contains(skipped) }, "\(second.stderr)")
        #expect(fixture.names("new").isEmpty, "\(fixture.names("new"))")
        #expect(fixture.names("done").isEmpty && fixture.names("rejected").isEmpty, "\(fixture.names("done"))")
        #expect(fixture.server.requests.count == items, "no purchase is credited twice")
    }

    /// An upload of a receipt created at `created` holding one
    /// subscription (test PKI), bought 2025-05-01, that expires at `expires`.
    static func subscriptionUpload(expiring expires: String, created: String) -> String {
        var purchase = TestReceipt.Purchase(transactionId: "1000000000000003")
        purchase.expiresDate = expires
        let receipt = TestReceipt.sign(TestReceipt.payload(creationDate: created, purchases: [purchase]))
        return String(decoding: TestReceipt.upload(receipt), as: UTF8.self)
    }

    static let earlierExpiry = "2025-06-01T10:00:00Z"
    static let extendedExpiry = "2025-06-15T10:00:00Z"
    static let earlier = subscriptionUpload(expiring: earlierExpiry, created: "2025-05-10T00:00:00Z")
    /// After "Extend a Subscription Renewal Date": the same transaction.
    static let extended = subscriptionUpload(expiring: extendedExpiry, created: "2025-05-20T00:00:00Z")

    /// The expiry each delivery of the subscription carried, in order.
    static func deliveredExpiries(_ fixture: DaemonFixture) -> [Int64?] {
        fixture.server.requests.compactMap { try? JSONValue.parse($0.body) }
            .filter { $0["id"] == .string("1000000000000003") }.map { $0["expiresDate"]?.int64Value }
    }

    static func milliseconds(_ date: String) -> Int64 { ReceiptDate.milliseconds(date)! }

    @Test func anExtendedRenewalDateIsDeliveredAndAnOlderReceiptAfterItIsNot() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: ReceiptIntegrationTests.testPKIVerification)
        let first = try await fixture.start()
        try fixture.drop(Self.earlier, name: "earlier")
        #expect(await fixture.eventually { fixture.server.requests.count == 2 }, "its purchase and the receipt")
        try fixture.drop(Self.extended, name: "extended")
        #expect(await fixture.eventually { fixture.server.requests.count == 4 }, "\(first.stderr)")
        #expect(Self.deliveredExpiries(fixture) == [Self.milliseconds(Self.earlierExpiry),
                                                    Self.milliseconds(Self.extendedExpiry)])
        try await forgetDone(fixture, first)

        // The app still holds the receipt from before the extension.
        let second = try await fixture.start()
        try fixture.drop(Self.earlier, name: "earlier-again")
        let skipped = "every item already confirmed or pending at its version (2 confirmed, 0 pending)"
        #expect(await fixture.eventually { second.stderr.contains(skipped) }, "\(second.stderr)")
        try fixture.drop(Self.extended, name: "extended-again")
        #expect(await fixture.eventually {
            second.stderr.split(separator: "\n").filter { $0.contains(skipped) }.count == 2
        }, "\(second.stderr)")
        #expect(fixture.server.requests.count == 4, "the backend keeps the extended expiry")
    }

    @Test func aSubscriptionAnEarlierReleaseConfirmedIsNotDeliveredAgainButItsExtensionIs() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: ReceiptIntegrationTests.testPKIVerification)
        let first = try await fixture.start()
        try fixture.drop(Self.earlier, name: "earlier")
        #expect(await fixture.eventually { fixture.server.requests.count == 2 })
        try await forgetDone(fixture, first)
        // What a release before the expiry was part of a purchase's version
        // recorded: the purchase date alone.
        let key = try #require(ItemKey("1000000000000003"))
        let recorded = try #require(try SQLiteLedger(path: fixture.ledgerPath).records(of: key).first?.version)
        #expect(recorded.secondary == Self.milliseconds(Self.earlierExpiry))
        try SQLiteDatabase(path: fixture.ledgerPath, access: .readWriteCreate)
            .execute("UPDATE confirmations SET version_secondary = 0 WHERE kind = 'appstore.receipt'")

        let second = try await fixture.start()
        try fixture.drop(Self.earlier, name: "earlier-again")
        let skipped = "every item already confirmed or pending at its version (2 confirmed, 0 pending)"
        #expect(await fixture.eventually { second.stderr.contains(skipped) }, "\(second.stderr)")
        try fixture.drop(Self.extended, name: "extended")
        #expect(await fixture.eventually { fixture.server.requests.count == 4 }, "\(second.stderr)")
        #expect(Self.deliveredExpiries(fixture) == [Self.milliseconds(Self.earlierExpiry),
                                                    Self.milliseconds(Self.extendedExpiry)])
    }
}
