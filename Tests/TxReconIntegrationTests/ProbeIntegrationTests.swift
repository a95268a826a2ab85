// The built `txrecon probe` against the mock App Store Server API, which
// POSTs Apple's real Sandbox TEST notification to the built receiver, with
// the built daemon delivering to a loopback backend: the hops are printed
// and the exit status says whether the backend confirmed it.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

/// A mock API, a receiver and a daemon on one spool; [Sweep] points at the mock.
private final class ProbeFixture {
    let api: MockAppStoreServerAPI
    let receiver: ReceiverFixture
    /// Apple's TEST notification from the samples.
    let signedPayload: String
    /// Holds the In-App Purchase key for the probe's life.
    let keyDirectory = TemporaryDirectory("txrecon-probe-key")

    init(backend: @escaping LoopbackHTTPServer.Handler = { _ in .status(200) }) throws {
        let sample = try SystemCall.readFile(DaemonIntegrationTests.samples + "/05-notification-test.json", limit: 1 << 20)
        signedPayload = try #require(try JSONValue.parse(sample)["signedPayload"]?.stringValue)
        let key = TestSigningKey()
        var identity = MockAppStoreServerAPI.Identity(key: key)
        identity.bundleID = "com.loki-project.loki-messenger"
        api = try MockAppStoreServerAPI(identity: identity, entries: [], historyDays: 30, now: { WallTime.nowMilliseconds })
        let keyPath = keyDirectory.write(key.pkcs8PEM, to: "appstore-key.p8", mode: 0o600)
        receiver = try ReceiverFixture(spool: api.sweepSection(privateKeyFile: keyPath), backend: backend)
        api.sendTestNotifications(signedPayload: signedPayload, toPort: receiver.port)
    }

    var daemon: DaemonFixture { receiver.daemon }

    func probe(timeout: Int = 60) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await daemon.cli(["probe", "--timeout", String(timeout)])
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct ProbeIntegrationTests {
    @Test func aTestNotificationIsFollowedToTheBackendsConfirmation() async throws {
        let fixture = try ProbeFixture()
        try await fixture.receiver.start()
        try await fixture.daemon.start()
        let probe = try await fixture.probe()
        #expect(probe.status == 0, "stdout:\n\(probe.stdout)\nstderr:\n\(probe.stderr)")
        let lines = probe.stdout.split(separator: "\n").map(String.init)
        let hops = ["Apple     will send a TEST notification (testNotificationToken test-",
                    "Apple     sent it to the notification URL; the receiver answered 2xx",
                    "receiver  spooled it", "daemon    verified it and ", "backend   confirmed it: done/"]
        var at = 0
        for hop in hops {
            let found = lines.indices.first { $0 >= at && lines[$0].contains(hop) }
            #expect(found != nil, "\(hop) after line \(at) in:\n\(probe.stdout)")
            at = (found ?? at) + 1
        }
        #expect(lines.last == "probe: confirmed end to end")
        #expect(fixture.api.problems == [])
        #expect(fixture.daemon.server.requests.count == 1)
        #expect(fixture.api.testAttempts.values.flatMap { $0 } == ["SUCCESS"])
    }

    @Test func aNotificationTheReceiverRefusesStopsAtApplesAttempt() async throws {
        let fixture = try ProbeFixture()
        var forged = Array(fixture.signedPayload.utf8)
        let at = try #require(forged.lastIndex(of: UInt8(ascii: "."))) + 10
        forged[at] = forged[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        fixture.api.sendTestNotifications(signedPayload: String(decoding: forged, as: UTF8.self),
                                          toPort: fixture.receiver.port)
        try await fixture.receiver.start()
        try await fixture.daemon.start()
        let probe = try await fixture.probe()
        #expect(probe.status == 1, "\(probe.stdout)")
        #expect(probe.stdout.contains("could not deliver it to the notification URL: UNSUCCESSFUL_HTTP_RESPONSE_CODE"),
                "\(probe.stdout)")
        #expect(probe.stdout.contains("probe: stopped at Apple; the backend has not confirmed"), "\(probe.stdout)")
        #expect(fixture.daemon.server.requests.isEmpty)
        #expect(fixture.daemon.names("new").isEmpty)
    }

    @Test func aReceiverThatDoesNotRunIsNamedAsUnreachable() async throws {
        let fixture = try ProbeFixture()
        try await fixture.daemon.start()
        let probe = try await fixture.probe()
        #expect(probe.status == 1)
        #expect(probe.stdout.contains("NO_RESPONSE") && probe.stdout.contains("Apple could not reach the receiver"),
                "\(probe.stdout)")
    }

    @Test func aBackendThatRefusesItIsNamedWithItsReason() async throws {
        let fixture = try ProbeFixture { _ in .status(409, body: "order unknown") }
        try await fixture.receiver.start()
        try await fixture.daemon.start()
        let probe = try await fixture.probe()
        #expect(probe.status == 1, "\(probe.stdout)")
        #expect(probe.stdout.contains("backend   refused it; the daemon holds it in hold/:"), "\(probe.stdout)")
        #expect(probe.stdout.contains("order unknown"))
    }

    @Test func aDaemonThatDoesNotRunIsSaidAndTheTimeoutEndsTheProbe() async throws {
        let fixture = try ProbeFixture()
        try await fixture.receiver.start()
        // Long enough for the mock Apple to reach the receiver on a slow
        // machine (3 s was not, under ThreadSanitizer): the probe waits it
        // all out, as no daemon takes the notification.
        let probe = try await fixture.probe(timeout: 10)
        #expect(probe.status == 1)
        #expect(probe.stdout.contains("daemon    does not run on"), "\(probe.stdout)")
        #expect(probe.stdout.contains("has not taken it within the time"), "\(probe.stdout)")
    }

    @Test func aCredentialEchoedInApplesAnswerIsNotPrinted() async throws {
        let fixture = try ProbeFixture()
        fixture.api.echoCredentialsInTestTokens()
        try await fixture.receiver.start()
        try await fixture.daemon.start()
        let probe = try await fixture.probe(timeout: 3)
        let signatures = fixture.api.tokensSeen.compactMap { $0.split(separator: ".").last.map(String.init) }
        #expect(!signatures.isEmpty)
        for signature in signatures {
            #expect(!probe.stdout.contains(signature) && !probe.stderr.contains(signature), "\(probe.stdout)")
        }
        #expect(probe.stdout.contains("(testNotificationToken test-1-<redacted>)"), "\(probe.stdout)")
    }

    @Test func credentialsAppleRefusesAreAConfigurationError() async throws {
        let fixture = try ProbeFixture()
        fixture.api.refuseCredentials()
        let probe = try await fixture.probe()
        #expect(probe.status == 78, "\(probe.stdout)")
        #expect(probe.stdout.contains("Apple refused the credentials"), "\(probe.stdout)")
    }
}
