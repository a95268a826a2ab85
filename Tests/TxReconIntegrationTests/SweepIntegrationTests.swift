// The built `txrecon sweep` against the mock App Store Server API on
// 127.0.0.1, serving the real Apple-signed Sandbox notifications, with the
// daemon running on the same spool and delivering to a loopback backend.
// Real clocks here; the tests wait on processes with timeouts, never on
// fixed sleeps.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

/// A mock App Store Server API serving every real sample notification, dated
/// over the last few hours (every third one failed), plus a daemon fixture
/// whose configuration has a [Sweep] section pointing at it.
private final class SweepFixture {
    let api: MockAppStoreServerAPI
    let daemon: DaemonFixture
    /// The samples' signed payloads, as served.
    let payloads: [String]

    init() throws {
        payloads = AppStoreSamples.real().filter(\.isNotification).map {
            String(decoding: $0.bytes, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        }
        let now = WallTime.nowMilliseconds
        let entries = payloads.enumerated().map { index, payload in
            MockAppStoreServerAPI.Entry(date: now - Int64(index + 1) * 600_000, signedPayload: payload,
                                        failed: index % 3 == 0)
        }
        let key = TestSigningKey()
        api = try MockAppStoreServerAPI(identity: MockAppStoreServerAPI.Identity(key: key), entries: entries,
                                        pageSize: 4, historyDays: 30, now: { WallTime.nowMilliseconds })
        daemon = try DaemonFixture()
        let keyPath = daemon.directory.write(key.pkcs8PEM, to: "appstore-key.p8", mode: 0o600)
        try daemon.writeConfig(api.sweepSection(privateKeyFile: keyPath) + "\nMaxRequestsPerSecond=50")
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct SweepIntegrationTests {
    @Test func sweptNotificationsReachTheBackendThroughTheRunningDaemon() async throws {
        let fixture = try SweepFixture()
        try fixture.daemon.layout.createMissingDirectories()
        try await fixture.daemon.start()
        let sweep = try await fixture.daemon.cli(["sweep"])
        #expect(sweep.status == 0, "stderr: \(sweep.stderr)")
        #expect(fixture.api.problems == [])

        let decoder = InputDecoder()
        var keys: Set<String> = []
        for payload in fixture.payloads {
            guard case .item(let item) = try decoder.decode(Array(#"{"signedPayload":"\#(payload)"}"#.utf8)) else {
                Issue.record("a sample does not decode")
                continue
            }
            keys.insert(item.key.rawValue)
        }
        let backend = fixture.daemon.server
        #expect(await fixture.daemon.eventually {
            Set(backend.requests.compactMap { $0.header("Idempotency-Key")?.split(separator: ":").first.map(String.init) })
                == keys && fixture.daemon.names("queue").isEmpty && fixture.daemon.names("new").isEmpty
        })
        #expect(fixture.daemon.names("rejected").isEmpty)
        for request in backend.requests {
            let body = try JSONValue.parse(request.body)
            #expect(body["kind"] == .string("appstore.notification"))
            #expect(fixture.payloads.contains(body["signedPayload"]?.stringValue ?? ""))
        }

        let status = try await fixture.daemon.cli(["status"])
        #expect(status.stdout.contains("sweep:") && status.stdout.contains("completed: "))
    }

    @Test func aDryRunPrintsEveryNotificationItWouldSpoolAndSpoolsNone() async throws {
        let fixture = try SweepFixture()
        try fixture.daemon.layout.createMissingDirectories()
        let sweep = try await fixture.daemon.cli(["sweep", "--dry-run"])
        #expect(sweep.status == 0, "stderr: \(sweep.stderr)")
        let lines = sweep.stdout.split(separator: "\n")
        #expect(lines.count == fixture.payloads.count)
        #expect(lines.contains { $0.contains("  REFUND  ") })
        #expect(fixture.daemon.names("new").isEmpty)
        // Nothing made, no lock taken: a dry run as root for a look must
        // not leave the unit's user a state directory it cannot open.
        #expect(access(SweepStateDirectory.path(of: fixture.daemon.layout), F_OK) != 0)
    }

    /// A sweep whose turn of the run is already spent asks Apple nothing:
    /// the run's deadline reaches the sweeper, which stops as temporary and
    /// still records its result for txrecon status.
    @Test func aSweepWhoseTurnIsSpentAsksNothingAndStopsAsTemporary() async throws {
        let fixture = try SweepFixture()
        try fixture.daemon.layout.createMissingDirectories()
        let loaded = try ConfigurationLoader.load(path: fixture.daemon.configPath)
        let configuration = loaded.apps.first.map(loaded.settings(for:)) ?? loaded
        let clock = ManualSweepClock(wallMilliseconds: WallTime.nowMilliseconds)
        let report = SweepRun.perform(configuration: configuration, environment: [:], listing: nil, clock: clock,
                                      deadline: clock.now, log: RecordingLogSink())
        #expect(report.stop?.kind == .temporary && report.exitStatus == 75, "\(report.logEntry.message)")
        #expect(report.stop?.reason.contains("turn of the run is spent") == true, "\(report.logEntry.message)")
        #expect(fixture.api.served.isEmpty)
        #expect(LastSweep.read(AppRuns.layout(of: configuration)) != nil)
    }

    @Test func credentialsAppleRefusesExitWith78AndOneLine() async throws {
        let fixture = try SweepFixture()
        try fixture.daemon.layout.createMissingDirectories()
        fixture.api.refuseCredentials()
        let sweep = try await fixture.daemon.cli(["sweep"])
        #expect(sweep.status == 78)
        let lines = sweep.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains("HTTP 401") == true)
        #expect(!sweep.stderr.contains("PRIVATE KEY") && !sweep.stderr.contains("Bearer"))
    }

    @Test func aServerThatEchoesTheTokenDoesNotGetItIntoTheOutput() async throws {
        let fixture = try SweepFixture()
        try fixture.daemon.layout.createMissingDirectories()
        fixture.api.refuseRequestsEchoingCredentials()
        let sweep = try await fixture.daemon.cli(["sweep"])
        #expect(sweep.status != 0)
        let tokens = fixture.api.tokensSeen
        #expect(!tokens.isEmpty)
        for token in tokens {
            let signature = String(token.split(separator: ".").last ?? "")
            #expect(!sweep.stderr.contains(signature) && !sweep.stdout.contains(signature), "\(sweep.stderr)")
        }
        #expect(sweep.stderr.contains("HTTP 403, errorCode 4030000 (signature <redacted> refused for Bearer <redacted>)"),
                "\(sweep.stderr)")
    }
}
