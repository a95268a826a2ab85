// SweepHarness: one `Sweeper` wired for a unit test: a throw-away spool
// (tmp/ and new/), its sweep/ state directory, a fresh P-256 key, the mock
// App Store Server API on 127.0.0.1 and a manual clock, so runs never sleep.
// Each run happens on a dedicated thread, as in production, and the test
// awaits its report. Also builds signed-looking notifications (unsigned: the
// sweep never verifies) and reads back what landed in new/.
import Glibc
import Synchronization
import TxRecon

package final class SweepHarness: Sendable {
    /// 2026-01-01T00:00:00Z: the manual clock's start.
    package static let start: Int64 = 1_767_225_600_000

    package let directory = TemporaryDirectory("txrecon-sweep")
    package let clock = ManualSweepClock(wallMilliseconds: SweepHarness.start)
    package let api: MockAppStoreServerAPI
    package let settings: SweepSettings
    private let keyPEM: String

    package var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }

    /// - Parameters:
    ///   - entries: the mock's history.
    ///   - configure: changes to the [Sweep] settings (the ids, the key
    ///     and BaseURL are set here).
    package init(entries: [MockAppStoreServerAPI.Entry], pageSize: Int = 3,
                configure: (inout SweepSettings) -> Void = { _ in }) throws {
        let key = TestSigningKey()
        keyPEM = key.pkcs8PEM
        var settings = SweepSettings()
        configure(&settings)
        let clock = self.clock
        let identity = MockAppStoreServerAPI.Identity(key: key)
        api = try MockAppStoreServerAPI(
            identity: identity, entries: entries, pageSize: pageSize,
            historyDays: settings.environment.historyLimit.components.seconds / 86_400,
            now: { clock.wallMilliseconds })
        settings.bundleID = identity.bundleID
        settings.issuerID = identity.issuerID
        settings.keyID = identity.keyID
        settings.baseURL = api.url
        self.settings = settings
        directory.makeDirectory("spool/tmp", mode: 0o770)
        directory.makeDirectory("spool/new", mode: 0o770)
    }

    /// One sweep. `interruptAtSave` makes the n-th checkpoint save (1 for
    /// the first) fail as a kill would leave it: after the page's
    /// notifications are in new/, before the checkpoint records them.
    /// `listing` makes it a dry run. `deadline`: on the clock's `now`,
    /// when the app's turn ends, for the rate limiter and the sweeper both.
    package func run(interruptAtSave: Int? = nil, listing: (@Sendable (HistoryNotification) -> Void)? = nil,
                     deadline: Duration? = nil) async throws -> SweepReport {
        try await DedicatedThread.run(name: "sweep-test") { [settings, clock, layout, keyPEM] in
            var report = SweepReport(environment: settings.environment, dryRun: listing != nil,
                                     startedAt: clock.wallMilliseconds)
            do throws(SweepStop) {
                let key = try! ES256PrivateKey(pem: Array(keyPEM.utf8))
                let tokens = APITokenIssuer(issuerID: settings.issuerID!, keyID: settings.keyID!,
                                            bundleID: settings.bundleID!, key: key)
                let client = try! AppStoreAPIClient(baseURL: settings.effectiveBaseURL, tokens: tokens, clock: clock)
                let state = try SweepStateDirectory(layout: layout)
                let store: any SweepStateStore = interruptAtSave.map { InterruptedStateStore(state, failingSave: $0) } ?? state
                let limiter = RateLimiter(maxRequestsPerSecond: settings.maxRequestsPerSecond, clock: clock, jitter: { 1 },
                                          deadline: deadline)
                report = Sweeper(settings: settings, client: client, limiter: limiter, clock: clock,
                                 submission: Submission(layout: layout), store: store, listing: listing,
                                 deadline: deadline).run()
            } catch {
                report.stop = error
            }
            return report
        }
    }

    /// Saves `checkpoint` as if an earlier run had left it.
    package func saveCheckpoint(_ checkpoint: SweepCheckpoint) throws {
        try SweepStateDirectory(layout: layout).saveCheckpoint(checkpoint)
    }

    /// The checkpoint on disk.
    package func savedCheckpoint() throws -> SweepCheckpoint {
        try SweepStateDirectory(layout: layout).loadCheckpoint()
    }

    /// The `signedPayload` of every file in new/ (in no particular order);
    /// a file that is not `{"signedPayload": …}` alone reads as its text.
    package func spooledPayloads() throws -> [String] {
        try SystemCall.listDirectory(layout.new).map { name in
            let bytes = try SystemCall.readFile(layout.new + "/" + name, limit: 1 << 20)
            guard let value = try? JSONValue.parse(bytes), value.objectValue?.count == 1,
                  let payload = value["signedPayload"]?.stringValue
            else { return String(decoding: bytes, as: UTF8.self) }
            return payload
        }
    }

    /// An unsigned notification JWS with its own UUID and signedDate.
    package static func notification(_ number: Int, signedDate: Int64, type: String = "DID_RENEW") -> String {
        TestJWS.make(payload: .object([
            ("notificationType", .string(type)),
            ("notificationUUID", .string("00000000-0000-4000-8000-\(String(1_000_000_000_000 + number).suffix(12))")),
            ("signedDate", .integer(signedDate)),
            ("data", .object([("bundleId", .string("com.example.app")), ("environment", .string("Production"))])),
        ]))
    }
}

/// A state store whose n-th checkpoint save fails, as a kill between a
/// page's drops and its checkpoint would leave things.
final class InterruptedStateStore: SweepStateStore, Sendable {
    private let inner: SweepStateDirectory
    private let failingSave: Int
    private let saves = Mutex(0)

    init(_ inner: SweepStateDirectory, failingSave: Int) {
        self.inner = inner
        self.failingSave = failingSave
    }

    func loadCheckpoint() throws(SweepStop) -> SweepCheckpoint {
        try inner.loadCheckpoint()
    }

    func reportGap(_ gap: ReconcileGap) throws(SweepStop) {
        try inner.reportGap(gap)
    }

    func saveCheckpoint(_ checkpoint: SweepCheckpoint) throws(SweepStop) {
        let number = saves.withLock { count in
            count += 1
            return count
        }
        guard number != failingSave else { throw SweepStop(kind: .failed, reason: "killed before save \(number)") }
        try inner.saveCheckpoint(checkpoint)
    }
}
