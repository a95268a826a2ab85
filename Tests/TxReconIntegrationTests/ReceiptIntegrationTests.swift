// The built daemon (and `txrecon receive`) taking StoreKit 1 receipt
// uploads: Apple's real receipt verified with the shipped root and
// delivered as one item per purchase plus the receipt once, with the app's
// context labelled, and never again however often it is uploaded; the
// receipt stored once in receipts/, not copied into every purchase; a
// customer's history of 5,000 purchases taken at the default limits;
// forged and hostile receipts rejected and never sent, and parts that name
// no stored receipt rejected.
import FoundationEssentials
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(3)))
struct ReceiptIntegrationTests {
    static let real = "sandbox-tpinappreceipt-1.receipt"
    static let purchases = ["2000001092134138", "2000001092148094"]

    func fixture(bundleID: String = "dev.bonzer.weeka.app", receiptRoot: String = ReceiptSamples.shippedRoot) throws -> DaemonFixture {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", verification: """
            [Verification]
            BundleID=\(bundleID)
            Environment=Production Sandbox
            AppAppleID=1234567890
            RootCertificateFile=\(DaemonIntegrationTests.repositoryRoot)/Config/AppleRootCA-G3.cer
            ReceiptRootCertificateFile=\(receiptRoot)
            """)
        return fixture
    }

    /// Receipts signed by the test PKI (TestReceipt), for com.example.app.
    static let testPKIVerification = """
        [Verification]
        BundleID=com.example.app
        Environment=Sandbox
        RootCertificateFile=\(TestPKI.path("root"))
        ReceiptRootCertificateFile=\(TestReceipt.path("root"))
        """

    /// The bytes every regular file under `root` holds (their sizes), the
    /// disk they take (st_blocks: a file of 100 bytes takes a block of 4 KiB
    /// on most file systems), and how many files there are.
    static func spoolBytes(_ root: String) -> (bytes: Int, disk: Int, files: Int) {
        var total = (bytes: 0, disk: 0, files: 0)
        for name in (try? SystemCall.listDirectory(root)) ?? [] {
            let path = root + "/" + name
            guard let info = try? SystemCall.linkStatus(path) else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                let inner = spoolBytes(path)
                total = (total.bytes + inner.bytes, total.disk + inner.disk, total.files + inner.files)
            } else if info.st_mode & S_IFMT == S_IFREG {
                total = (total.bytes + Int(info.st_size), total.disk + Int(info.st_blocks) * 512, total.files + 1)
            }
        }
        return total
    }

    static func bodies(_ server: LoopbackHTTPServer) -> [JSONValue] {
        server.requests.compactMap { try? JSONValue.parse($0.body) }
    }

    @Test func anUploadIsDeliveredAsItsPurchasesAndItsReceiptOnceAndNotAgainWhenUploadedAgain() async throws {
        let fixture = try fixture()
        try await fixture.start()
        let context: [(String, JSONValue)] = [
            ("orderID", .string("A-17")), ("productId", .string("dev.bonzer.weeka.app.subscription.pro.annual")),
            ("applicationUsername", .string("order-17")),
        ]
        let upload = JSONValue.object([("receipt", .string(ReceiptSamples.base64(Self.real)))] + context).serializedString
        let der = try ReceiptSamples.der(Self.real)
        let name = ReceiptStore.name(of: der)
        try fixture.drop(upload)
        let all = (Self.purchases + ["receipt-" + name]).sorted()
        #expect(await fixture.eventually { fixture.doneItems().sorted() == all }, "\(fixture.names("rejected"))")
        #expect(fixture.server.requests.count == 3)
        for body in Self.bodies(fixture.server) {
            #expect(body["environment"] == .string("Sandbox") && body["bundleId"] == .string("dev.bonzer.weeka.app"))
            #expect(body["receiptSha256"] == .string(name))
            #expect(body["unverified"] == .object(context))
            #expect(body["txreconReceiptEntry"] == nil, "the split's own member stays out of the body")
            if body["id"] == .string("receipt-" + name) {
                #expect(body["kind"] == .string("appstore.receipt-file"))
                #expect(body["receipt"] == .string(Data(der).base64EncodedString()), "the receipt, once")
            } else {
                #expect(body["kind"] == .string("appstore.receipt"))
                #expect(body["receipt"] == nil, "a purchase names its receipt, it does not carry it")
                #expect(body["transactionId"] == body["id"])
            }
        }
        #expect(fixture.names("receipts") == [name])
        #expect(try SystemCall.readFile(fixture.layout.receipts + "/" + name, limit: 1 << 20) == der)

        // The app uploads its receipt again after its next purchase: what
        // every destination confirmed is not even split again.
        try fixture.drop(upload, name: "again")
        // Set aside for its split, it leaves new/ before the split looks at it.
        #expect(await fixture.eventually { fixture.names("new").isEmpty && fixture.names("receipts") == [name] })
        #expect(fixture.server.requests.count == 3)
        #expect(fixture.names("done").filter { $0.contains(".superseded-") }.isEmpty)
        #expect(fixture.names("rejected").isEmpty && fixture.names("receipts") == [name])
    }

    @Test func aPartThatNamesNoStoredReceiptOrNoPurchaseOfItsReceiptIsRejected() async throws {
        let fixture = try fixture()
        try await fixture.start()
        try fixture.drop(ReceiptSamples.base64(Self.real))
        let name = ReceiptStore.name(of: try ReceiptSamples.der(Self.real))
        #expect(await fixture.eventually { fixture.doneItems().count == 3 })
        let unknown = String(repeating: "0", count: 64)
        try fixture.drop(#"{"receiptSha256":"\#(unknown)","txreconReceiptEntry":"2000001092134138"}"#, name: "unstored")
        try fixture.drop(#"{"receiptSha256":"\#(name)","txreconReceiptEntry":"2000009999999999"}"#, name: "no-such-entry")
        // A producer's own part naming a genuine stored purchase gains
        // nothing: it is that purchase, already delivered.
        try fixture.drop(#"{"receiptSha256":"\#(name)","txreconReceiptEntry":"2000001092134138"}"#, name: "genuine")
        #expect(await fixture.eventually { fixture.names("rejected").count == 4 && fixture.names("new").isEmpty },
                "\(fixture.names("rejected")) \(fixture.names("new"))")
        #expect(fixture.rejectionCode("unstored") == "receipt-not-stored")
        #expect(fixture.rejectionCode("no-such-entry") == "invalid-field")
        #expect(fixture.server.requests.count == 3)
        #expect(fixture.names("done").filter { $0.hasPrefix("2000001092134138.superseded-") }.count == 1)
    }

    /// A further destination, analytics (answered by `analytics`), whose
    /// inbox holds a copy of the real receipt's first purchase (upload.1),
    /// its receipt stored: what a fan-out that analytics could not take
    /// yet leaves. The configuration's text, the receipt, analytics' layout.
    static func copyWaitingAtAnalytics(_ fixture: DaemonFixture, _ analytics: LoopbackHTTPServer) throws
        -> (verification: String, der: [UInt8], copies: SpoolLayout) {
        let verification = try String(contentsOfFile: fixture.configPath, encoding: .utf8)
        _ = fixture.directory.write("[Backend]\nURL=\(analytics.url)analytics\nTimeout=2s\n",
                                    to: "destinations/analytics.conf")
        let der = try ReceiptSamples.der(real)
        let name = ReceiptStore.name(of: der)
        try fixture.layout.createMissingDirectories()
        try ReceiptStore(layout: fixture.layout).store(der, name: name)
        let copies = fixture.layout.destination("analytics")
        try copies.createMissingDestinationDirectories()
        _ = fixture.directory.write(#"{"receiptSha256":"\#(name)","txreconReceiptEntry":"\#(purchases[0])"}"#,
                                    to: "spool/destinations/analytics/new/upload.1")
        return (verification, der, copies)
    }

    /// A further destination's copy of a purchase is read with its stored
    /// receipt; one that cannot be read just now (here: a directory where
    /// the receipt should be, so read(2) fails with EISDIR, as EIO would)
    /// leaves the copy waiting, as a drop in new/ would, never rejected as a
    /// copy that "no longer decodes". (Until 2026-12-08 this test lowered
    /// MaxFileSize= below the receipt's size, which is now a too-large
    /// rejection: no later read would take it.)
    @Test func aCopyWhoseReceiptCannotBeReadNowWaitsAndIsDeliveredOnceItCanBe() async throws {
        let fixture = try fixture()
        let analytics = try LoopbackHTTPServer { _ in .status(204) }
        defer { analytics.stop() }
        let (_, der, copies) = try Self.copyWaitingAtAnalytics(fixture, analytics)
        let receipt = fixture.layout.receipts + "/" + ReceiptStore.name(of: der)
        try SystemCall.unlinkIfPresent(receipt)
        try SystemCall.makeDirectory(receipt, mode: 0o750)

        let daemon = try await fixture.start()
        #expect(await fixture.eventually { daemon.stderr.contains("upload.1 not taken") }, "\(daemon.stderr)")
        #expect(((try? SystemCall.listDirectory(copies.rejected)) ?? []).isEmpty, "not rejected for a passing fault")
        #expect(((try? SystemCall.listDirectory(copies.new)) ?? []) == ["upload.1"])

        #expect(rmdir(receipt) == 0)
        try ReceiptStore(layout: fixture.layout).store(der, name: ReceiptStore.name(of: der))
        daemon.signal(SIGHUP)
        #expect(await analytics.waitForRequests(count: 1, timeout: .seconds(60)), "\(daemon.stderr)")
        #expect(Self.bodies(analytics).first?["transactionId"]?.stringValue == Self.purchases[0])
    }

    /// MaxFileSize= lowered below the stored receipt a waiting copy names:
    /// no later read takes the receipt, so the copy is rejected as
    /// too-large, saying so, not left waiting for ever.
    @Test func aCopyWhoseReceiptExceedsALoweredMaxFileSizeIsRejectedAsTooLarge() async throws {
        let fixture = try fixture()
        let analytics = try LoopbackHTTPServer { _ in .status(204) }
        defer { analytics.stop() }
        let (verification, der, copies) = try Self.copyWaitingAtAnalytics(fixture, analytics)
        _ = fixture.directory.write(verification + "\n[Spool]\nMaxFileSize=\(der.count - 1)\n", to: "txrecon.conf")

        let daemon = try await fixture.start()
        let reason = copies.rejected + "/upload.1.reason"
        #expect(await fixture.eventually { access(reason, F_OK) == 0 }, "\(daemon.stderr)")
        let text = String(decoding: (try? SystemCall.readFile(reason, limit: 65536)) ?? [], as: UTF8.self)
        #expect(text.hasPrefix("too-large") && text.contains("MaxFileSize= (\(der.count - 1) bytes)"), "\(text)")
        #expect(analytics.requests.isEmpty)
    }

    /// A copy that waited in a further destination's inbox across a start
    /// (or a reload) is verified under the settings of now: a Sandbox
    /// purchase once Environment= names Production alone is rejected
    /// there, never sent.
    @Test func aCopyWaitingAcrossAStartIsVerifiedUnderTheSettingsOfNow() async throws {
        let fixture = try fixture()
        let analytics = try LoopbackHTTPServer { _ in .status(204) }
        defer { analytics.stop() }
        let (verification, _, copies) = try Self.copyWaitingAtAnalytics(fixture, analytics)
        _ = fixture.directory.write(verification.replacingOccurrences(of: "Environment=Production Sandbox",
                                                                      with: "Environment=Production"),
                                    to: "txrecon.conf")

        let daemon = try await fixture.start()
        #expect(await fixture.eventually { ((try? SystemCall.listDirectory(copies.rejected)) ?? []).contains("upload.1") },
                "\(daemon.stderr)")
        let reason = String(decoding: try SystemCall.readFile(copies.rejected + "/upload.1.reason", limit: 1 << 16),
                            as: UTF8.self)
        #expect(reason.hasPrefix("wrong-environment: "), "\(reason)")
        #expect(analytics.requests.isEmpty)
    }

    @Test func aPurchaseWhoseReceiptIsNoLongerStoredIsNotReplayedAndTheAnswerSaysWhy() async throws {
        let fixture = try fixture()
        try await fixture.start()
        try fixture.drop(ReceiptSamples.base64(Self.real))
        let name = ReceiptStore.name(of: try ReceiptSamples.der(Self.real))
        #expect(await fixture.eventually { fixture.doneItems().count == 3 })
        // done/ may keep a purchase longer than receipts/ its receipt.
        try SystemCall.unlinkIfPresent(fixture.layout.receipts + "/" + name)
        let replayed = try await fixture.cli(["replay", Self.purchases[0]])
        #expect(replayed.status == 1, "\(replayed.stdout) \(replayed.stderr)")
        #expect(replayed.stderr.contains("receipts/ no longer holds"), "\(replayed.stderr)")
        #expect(fixture.names("queue").isEmpty && fixture.names("hold").isEmpty)
        #expect(fixture.server.requests.count == 3)
    }

    @Test func aForgedOrForeignReceiptIsRejectedAndNeverSent() async throws {
        let fixture = try fixture()
        try await fixture.start()
        var altered = try ReceiptSamples.der(Self.real)
        let at = try #require(altered.firstRange(of: Array("2000001092148094".utf8))).lowerBound
        altered[at + 15] = UInt8(ascii: "5")
        try fixture.drop(String(decoding: TestReceipt.upload(altered), as: UTF8.self), name: "altered")
        try fixture.drop(String(decoding: TestReceipt.upload(TestReceipt.sign(TestReceipt.payload(
            bundleId: "dev.bonzer.weeka.app", purchases: [TestReceipt.Purchase(transactionId: "1000000000000001")]))),
            as: UTF8.self), name: "test-pki")
        try fixture.drop(ReceiptSamples.base64("xcode-tpinappreceipt-1.receipt"), name: "xcode")
        try fixture.drop(String(decoding: Array(TestReceipt.upload(try ReceiptSamples.der(Self.real)).prefix(600)),
                                as: UTF8.self), name: "truncated")
        #expect(await fixture.eventually { fixture.names("rejected").count == 8 }, "\(fixture.names("rejected"))")
        #expect(fixture.rejectionCode("altered") == "invalid-receipt-signature")
        #expect(fixture.rejectionCode("test-pki") == "receipt-untrusted-chain")
        #expect(fixture.rejectionCode("xcode") == "receipt-untrusted-chain")
        #expect(fixture.rejectionCode("truncated") == "not-json")
        #expect(fixture.server.requests.isEmpty)
        #expect(fixture.names("new").isEmpty, "nothing was split out of a forged receipt")
        #expect(fixture.names("receipts").isEmpty, "nor stored")
    }

    @Test func aHundredUploadsOfARealReceiptOf187PurchasesCostAtMostAHundredTimesItsSizeAndDeliverEachOnce() async throws {
        let name = "sandbox-tpinappreceipt-2.receipt"
        let fixture = try fixture(bundleID: try #require(try ReceiptSamples.expected(name)["bundle_id_2"]?.stringValue))
        try await fixture.start()
        let upload = JSONValue.object([("receipt", .string(ReceiptSamples.base64(name))),
                                       ("orderID", .string("A-17"))]).serializedString
        for index in 0..<100 { try fixture.drop(upload, name: "upload-\(index)") }
        // Delivered items are done/KEY; done/KEY.superseded-… are repeats
        // that arrived while their purchase was still pending.
        func delivered() -> Int { fixture.doneItems().filter { !$0.contains(".") }.count }
        // Done once no upload is aside in receipts/ being split either (the
        // last duplicates leave new/ before their split has removed them).
        #expect(await fixture.eventually(timeout: .seconds(90)) {
            delivered() == 188 && fixture.names("new").isEmpty && fixture.names("queue").isEmpty
                && !fixture.names("receipts").contains { $0.hasPrefix(".") }
        }, "\(delivered()) delivered, \(fixture.names("new").count) in new/, receipts/ \(fixture.names("receipts")), rejected \(fixture.names("rejected"))")
        var deliveries: [String: Int] = [:]
        for body in Self.bodies(fixture.server) { deliveries[body["id"]?.stringValue ?? "?", default: 0] += 1 }
        #expect(deliveries.count == 188, "187 purchases and the receipt")
        #expect(deliveries.values.allSatisfy { $0 == 1 }, "\(deliveries.filter { $0.value > 1 })")
        // On disk, not in st_size: a superseded copy of each part per upload
        // took a block of its own, 77 MB against the budget of 10.5.
        let spool = Self.spoolBytes(fixture.layout.root)
        #expect(spool.disk <= 100 * upload.utf8.count,
                "\(spool.disk) bytes on disk in \(spool.files) files, against 100 uploads of \(upload.utf8.count)")
        #expect(fixture.names("receipts").count == 1, "identical receipts are stored once")
    }

    @Test func aReceiptOfFiveThousandPurchasesIsTakenByTheReceiverAndTheDaemonAtTheirDefaultsAndStoredOnce() async throws {
        // The default Timeout= (10 s), not the fixture's 2 s: an answer
        // slower than that on a loaded host is tried again, a repeat at
        // least once allows and this test would count.
        let fixture = try ReceiverFixture(receive: "\n[Backend]\nTimeout=10s", verification: Self.testPKIVerification)
        try await fixture.start()
        try await fixture.daemon.start()
        let der = TestReceipt.sign(TestReceipt.payload(purchases: TestReceipt.purchases(5_000)))
        let upload = TestReceipt.upload(der)
        #expect(upload.count > 2_500_000, "about 3 MB in base64: \(upload.count)")
        let reply = try await fixture.post("/appstore/transactions", upload)
        #expect(reply.status == 200, "\(reply.status) \(reply.body)")
        let server = fixture.daemon.server
        #expect(await server.waitForRequests(count: 5_001, timeout: .seconds(120)),
                "\(server.requests.count) delivered; rejected \(fixture.daemon.names("rejected"))")
        #expect(await fixture.daemon.eventually(timeout: .seconds(30)) {
            fixture.daemon.doneItems().count == 5_001 && fixture.daemon.names("new").isEmpty
        })
        let name = ReceiptStore.name(of: der)
        var kinds: [String: Int] = [:]
        var deliveries: [String: Int] = [:]
        var carryingTheReceipt = 0
        for body in Self.bodies(server) {
            kinds[body["kind"]?.stringValue ?? "?", default: 0] += 1
            deliveries[body["id"]?.stringValue ?? "?", default: 0] += 1
            if body["receipt"] != nil { carryingTheReceipt += 1 }
            #expect(body["receiptSha256"] == .string(name))
        }
        // Sent more than once: which, and what the daemon said of them.
        let repeated = deliveries.filter { $0.value > 1 }.keys.sorted()
        let lines = (fixture.daemon.daemon?.stderr ?? "").split(separator: "\n")
            .filter { line in repeated.contains { line.contains($0) } }.prefix(20)
        #expect(kinds == ["appstore.receipt": 5_000, "appstore.receipt-file": 1],
                "sent more than once: \(repeated.prefix(10)); the daemon: \(lines.joined(separator: " | "))")
        #expect(carryingTheReceipt == 1, "the receipt goes out once")
        let spool = Self.spoolBytes(fixture.layout.root)
        #expect(spool.bytes <= 2 * upload.count + 5_001 * 256,
                "\(spool.bytes) bytes in \(spool.files) files for a receipt of \(der.count) bytes")
    }
}
