// What `txrecon receive` decides without a socket: the route of a head, the
// upload token, the per-address rate (on given instants, no sleeping), the
// verdict on a body (with the test PKI), and the counts it reports.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiveDecisionTests {
    static func head(_ method: String, _ path: String, client: String = "127.0.0.1") -> HTTPRequestHead {
        HTTPRequestHead(method: method, path: path, client: client)
    }

    // MARK: Routes

    @Test func eachEndpointIsRoutedAndOthersAre404Or405() throws {
        #expect(try ReceiveEndpoint.route(Self.head("POST", "/appstore/notifications"), acceptEnvelopes: false).get()
                == .notifications)
        #expect(try ReceiveEndpoint.route(Self.head("GET", "/healthz"), acceptEnvelopes: false).get() == .health)
        #expect(try ReceiveEndpoint.route(Self.head("POST", "/envelopes"), acceptEnvelopes: true).get() == .envelopes)
        guard case let .failure(hidden) = ReceiveEndpoint.route(Self.head("POST", "/envelopes"), acceptEnvelopes: false),
              case let .failure(unknown) = ReceiveEndpoint.route(Self.head("POST", "/appstore"), acceptEnvelopes: true),
              case let .failure(method) = ReceiveEndpoint.route(Self.head("GET", "/appstore/transactions"),
                                                               acceptEnvelopes: true)
        else {
            Issue.record("a route that should be refused was taken")
            return
        }
        #expect(hidden.status == 404 && unknown.status == 404)
        #expect(method.status == 405 && method.headers.map(\.value) == ["POST"])
    }

    @Test func eachAppHasItsOwnNotificationPathAndOnlyAConfiguredAppDoes() throws {
        let apps = ["main", "puzzles"]
        #expect(try ReceiveEndpoint.route(Self.head("POST", "/appstore/notifications/puzzles"), acceptEnvelopes: false,
                                          apps: apps).get() == .notifications)
        #expect(ReceiveEndpoint.appPath("/appstore/notifications/puzzles", apps: apps) == "puzzles")
        #expect(ReceiveEndpoint.appPath("/appstore/notifications", apps: apps) == nil)
        guard case let .failure(unknown) = ReceiveEndpoint.route(Self.head("POST", "/appstore/notifications/chess"),
                                                                 acceptEnvelopes: false, apps: apps),
              case let .failure(noApps) = ReceiveEndpoint.route(Self.head("POST", "/appstore/notifications/puzzles"),
                                                                acceptEnvelopes: false)
        else {
            Issue.record("a path of no app configured was taken")
            return
        }
        #expect(unknown.status == 404 && noApps.status == 404)
    }

    @Test func whatCameOnAnAppsPathIsCountedByApp() {
        var statistics = ReceiveStatistics()
        statistics.spooledOne(setAside: false)
        statistics.spooledOne(setAside: false, onPathOf: "puzzles")
        statistics.spooledOne(setAside: false, onPathOf: "puzzles")
        let text = ReceiveMetricsReport.render(statistics, startedAt: 0, version: "t", running: true)
        #expect(text.contains("txrecon_receive_spooled_total 3\n"))
        #expect(text.contains("txrecon_receive_app_path_spooled_total{app=\"puzzles\"} 2\n"))
        let plain = ReceiveMetricsReport.render(ReceiveStatistics(), startedAt: 0, version: "t", running: true)
        #expect(!plain.contains("txrecon_receive_app_path_spooled_total"), "no family before any")
    }

    @Test func onlyTheUploadEndpointsNeedTheToken() {
        #expect(ReceiveEndpoint.allCases.filter(\.needsUploadToken) == [.transactions, .envelopes])
    }

    @Test func theBearerTokenMustMatchExactly() {
        #expect(Reception.bearer("Bearer s3cret", matches: "s3cret"))
        #expect(!Reception.bearer("Bearer s3cre", matches: "s3cret"))
        #expect(!Reception.bearer("Bearer s3cret2", matches: "s3cret"))
        #expect(!Reception.bearer("bearer s3cret", matches: "s3cret"))
        #expect(!Reception.bearer("s3cret", matches: "s3cret"))
        #expect(!Reception.bearer(nil, matches: "s3cret"))
    }

    // MARK: Rate

    @Test func anAddressGetsItsRateAndThenWaitsForTheBucketToRefill() {
        let limit = AddressRateLimit(perSecond: 4)
        let start = ContinuousClock.now
        #expect((0..<4).map { _ in limit.allows("10.0.0.1", now: start) } == [true, true, true, true])
        #expect(!limit.allows("10.0.0.1", now: start))
        #expect(limit.allows("10.0.0.2", now: start), "another address has its own bucket")
        #expect(!limit.allows("10.0.0.1", now: start + .milliseconds(200)), "0.8 of a request refilled")
        #expect(limit.allows("10.0.0.1", now: start + .milliseconds(260)))
        #expect((0..<5).map { _ in limit.allows("10.0.0.1", now: start + .seconds(10)) }
                == [true, true, true, true, false], "a quiet address refills to one second's worth, no more")
    }

    @Test func anIPv6ClientCountsByItsSlash64() {
        let limit = AddressRateLimit(perSecond: 1)
        let start = ContinuousClock.now
        #expect(limit.allows("2001:db8::1", now: start))
        #expect(!limit.allows("2001:db8::2", now: start), "the same /64")
        #expect(limit.allows("2001:db8:0:1::1", now: start), "another /64")
        #expect(limit.allows("10.0.0.1", now: start) && limit.allows("10.0.0.2", now: start))
        #expect(limit.allows("::ffff:10.0.0.3", now: start) && limit.allows("::ffff:10.0.0.4", now: start),
                "IPv4 clients of a dual-stack socket each count as themselves")
        #expect(!limit.allows("10.0.0.3", now: start), "as the same address written as IPv4")
    }

    @Test func addressesBeyondTheTableShareOneBucket() {
        let limit = AddressRateLimit(perSecond: 1, capacity: 2)
        let start = ContinuousClock.now
        #expect(limit.allows("10.0.0.1", now: start) && limit.allows("10.0.0.2", now: start))
        #expect(limit.allows("10.0.0.3", now: start), "the first newcomer takes the shared bucket's token")
        #expect(!limit.allows("10.0.0.4", now: start), "the next shares it")
        #expect(!limit.allows("10.0.0.1", now: start), "a known address keeps its own, spent, bucket")
        #expect(limit.allows("10.0.0.5", now: start + .seconds(61)), "quiet buckets are forgotten after a minute")
    }

    @Test func zeroMeansNoLimit() {
        let limit = AddressRateLimit(perSecond: 0)
        let now = ContinuousClock.now
        #expect((0..<1000).allSatisfy { _ in limit.allows("10.0.0.1", now: now) })
    }

    // MARK: Bodies

    static func verifier(bundleID: String = "com.example.app") throws -> SignedDataVerifier {
        SignedDataVerifier(policy: try VerificationFixtures.testPolicy(bundleID: bundleID))
    }

    /// Signed by the test PKI, as Apple signs them.
    static let notification = TestPKI.sign(payload: TestJWS.notificationPayload())
    static let transaction = TestPKI.sign(payload: TestJWS.transactionPayload(signedDate: TestPKI.insideLeafValidity))

    static func judge(_ body: [UInt8], at endpoint: ReceiveEndpoint, verifier: SignedDataVerifier?) -> BodyVerdict {
        BodyVerdict.judge(body, at: endpoint, decoder: InputDecoder(acceptEnvelopes: endpoint == .envelopes),
                          verifier: verifier)
    }

    /// The refusal `judge` makes of `body`; nil when it takes it.
    static func refusal(_ body: [UInt8], at endpoint: ReceiveEndpoint,
                        verifier: SignedDataVerifier?) -> ReceiveRefusal? {
        guard case let .refuse(refusal) = judge(body, at: endpoint, verifier: verifier) else { return nil }
        return refusal
    }

    @Test func aVerifiedNotificationIsSpooledAtItsEndpointOnly() throws {
        let body = TestDrop.notificationBody(Self.notification)
        let verdict = Self.judge(body, at: .notifications, verifier: try Self.verifier())
        #expect(verdict == .spool(setAside: nil), "\(verdict)")
        guard case let .refuse(refusal) = Self.judge(body, at: .transactions, verifier: try Self.verifier()) else {
            Issue.record("a notification was taken at the transactions endpoint")
            return
        }
        #expect(refusal.status == 400 && refusal.code == RejectionCode.unknownFormat.rawValue, "\(refusal)")
    }

    @Test func aTransactionIsSpooledAtTheTransactionsEndpointAndRefusedAtTheNotifications() throws {
        let upload = TestDrop.transactionUpload(Self.transaction)
        let verdict = Self.judge(upload, at: .transactions, verifier: try Self.verifier())
        #expect(verdict == .spool(setAside: nil), "\(verdict)")
        #expect(Self.judge(Array(Self.transaction.utf8), at: .transactions, verifier: try Self.verifier())
                == .spool(setAside: nil), "a bare JWS (format 1)")
        guard case let .refuse(refusal) = Self.judge(upload, at: .notifications, verifier: try Self.verifier()) else {
            Issue.record("a transaction was taken at the notifications endpoint")
            return
        }
        #expect(refusal.status == 400)
    }

    @Test func aSignatureThatDoesNotVerifyIs422() throws {
        var compact = Array(Self.notification.utf8)
        let at = try #require(compact.lastIndex(of: UInt8(ascii: "."))) + 5
        compact[at] = compact[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let body = TestDrop.notificationBody(String(decoding: compact, as: UTF8.self))
        guard case let .refuse(refusal) = Self.judge(body, at: .notifications, verifier: try Self.verifier()) else {
            Issue.record("a forged notification was taken")
            return
        }
        #expect(refusal.status == 422, "\(refusal)")
    }

    @Test func genuineDataForAnotherBundleIsSpooledToBeSetAside() throws {
        let body = TestDrop.notificationBody(Self.notification)
        guard case let .spool(setAside?) = Self.judge(body, at: .notifications,
                                                       verifier: try Self.verifier(bundleID: "com.example.other"))
        else {
            Issue.record("genuine data for another bundle was not kept")
            return
        }
        #expect(setAside.code == RejectionCode.wrongBundleID.rawValue)
    }

    /// The notification endpoint answers anyone: genuine signed data of an
    /// app not served, posted where it does not belong, is refused without
    /// naming the bundle ids the installation serves.
    @Test func aRefusalNeverNamesTheBundleIDsServed() throws {
        let upload = TestDrop.transactionUpload(Self.transaction)
        let refusal = try #require(Self.refusal(upload, at: .notifications,
                                                verifier: try Self.verifier(bundleID: "com.example.unreleased")),
                                   "a transaction was taken at the notifications endpoint")
        #expect(refusal.status == 400 && refusal.code == RejectionCode.unknownFormat.rawValue, "\(refusal)")
        #expect(!refusal.detail.contains("com.example.unreleased"), "\(refusal.detail)")
    }

    @Test func anUploadWithAForgedRenewalBesideAnotherBundlesTransactionIs422() throws {
        // The transaction is genuine but for another bundle (set aside, were
        // it alone); the renewal info beside it is not Apple's.
        var renewal = Array(TestPKI.sign(payload: TestJWS.renewalInfoPayload()).utf8)
        let at = try #require(renewal.lastIndex(of: UInt8(ascii: "."))) + 5
        renewal[at] = renewal[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let upload = TestDrop.transactionUpload(Self.transaction, renewal: String(decoding: renewal, as: UTF8.self))
        let refusal = try #require(Self.refusal(upload, at: .transactions,
                                                verifier: try Self.verifier(bundleID: "com.example.other")),
                                   "a body with a forged renewal info was spooled")
        #expect(refusal.status == 422 && refusal.code == RejectionCode.invalidSignature.rawValue, "\(refusal)")
    }

    @Test func notJSONIs400AndAnEnvelopeOnlyAtItsEndpoint() throws {
        guard case let .refuse(garbage) = Self.judge(Array("hello".utf8), at: .notifications, verifier: try Self.verifier())
        else {
            Issue.record("garbage was taken")
            return
        }
        #expect(garbage.status == 400)
        let envelope = Array(#"{"id":"order-1","version":1,"payload":{"n":1}}"#.utf8)
        #expect(Self.judge(envelope, at: .envelopes, verifier: nil) == .spool(setAside: nil))
        guard case let .refuse(elsewhere) = Self.judge(envelope, at: .transactions, verifier: try Self.verifier()) else {
            Issue.record("an envelope was taken at the transactions endpoint")
            return
        }
        #expect(elsewhere.status == 400)
    }

    @Test func aReceiptPartIsTheDaemonsOwnAndRefused400WhileItsReceiptIsTaken() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [TestReceipt.Purchase(transactionId: "1000000000000001")]))
        let verifier = SignedDataVerifier(policy: try ReceiptUploadTests.policy())
        #expect(Self.judge(TestReceipt.upload(receipt), at: .transactions, verifier: verifier) == .spool(setAside: nil))
        let part = ReceiptSplit.part(receiptSha256: ReceiptStore.name(of: receipt), entry: "1000000000000001", context: nil)
        guard case let .refuse(refusal) = Self.judge(part, at: .transactions, verifier: verifier) else {
            Issue.record("a receipt part was taken over HTTP")
            return
        }
        #expect(refusal.status == 400 && refusal.code == RejectionCode.receiptNotStored.rawValue, "\(refusal)")
        #expect(refusal.detail.contains("upload the receipt itself"), "\(refusal)")
    }

    // MARK: Counts

    @Test func theCountsAndTheStatusLineFollowTheAnswers() {
        var statistics = ReceiveStatistics()
        statistics.answered(200, after: .microseconds(800))
        statistics.spooledOne(setAside: false)
        statistics.answered(200, after: .milliseconds(3))
        statistics.spooledOne(setAside: true)
        statistics.answered(422, after: .milliseconds(1))
        statistics.cutAtDeadline()
        #expect(statistics.requests == 4)
        #expect(statistics.latency.count == 3)
        #expect(statistics.latency.cumulativeCounts.prefix(3) == [2, 2, 3], "800 µs and 1 ms at or below 1 ms, 3 ms at 5")
        #expect(ReceiveReporter.line(statistics, listening: "127.0.0.1:8081")
                == "receiving on 127.0.0.1:8081: 4 requests, 2 spooled, 2 refused, 1 to be set aside")
        let text = ReceiveMetricsReport.render(statistics, startedAt: 1_800_000_000_000, version: "t", running: true)
        #expect(text.contains("txrecon_receive_requests_total{code=\"200\"} 2\n"))
        #expect(text.contains("txrecon_receive_requests_total{code=\"422\"} 1\n"))
        #expect(text.contains("txrecon_receive_cut_total 1\n"))
    }

    @Test func refusedConnectionsAreCountedByLimitApartFromRequests() {
        var statistics = ReceiveStatistics()
        statistics.answered(200, after: .milliseconds(2))
        statistics.spooledOne(setAside: false)
        statistics.refusedConnection(at: .connectionsPerAddress)
        statistics.refusedConnection(at: .connectionsPerAddress)
        statistics.refusedConnection(at: .connections)
        #expect(statistics.requests == 1 && statistics.connectionsRefused == 3)
        #expect(ReceiveReporter.line(statistics, listening: "127.0.0.1:8081")
                == "receiving on 127.0.0.1:8081: 1 requests, 1 spooled, 3 connections refused")
        let text = ReceiveMetricsReport.render(statistics, startedAt: 0, version: "t", running: true)
        #expect(text.contains("txrecon_receive_connections_refused_total{limit=\"connections\"} 1\n"))
        #expect(text.contains("txrecon_receive_connections_refused_total{limit=\"connections_per_address\"} 2\n"))
        let idle = ReceiveMetricsReport.render(ReceiveStatistics(), startedAt: 0, version: "t", running: true)
        #expect(idle.contains("txrecon_receive_connections_refused_total{limit=\"connections\"} 0\n"),
                "both series from the start")
    }

    @Test func anIdleReceiverStillShowsA200Series() {
        let text = ReceiveMetricsReport.render(ReceiveStatistics(), startedAt: 0, version: "t", running: false)
        #expect(text.contains("txrecon_receive_requests_total{code=\"200\"} 0\n"))
        #expect(text.contains("txrecon_receive_up 0\n"))
    }
}
