// The built daemon against a backend that echoes the request's headers in
// its refusal: the bearer token reaches no text txrecon stores or prints.
// And the configuration checks the daemon makes before it runs.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct SecretOutputTests {
    static let token = "tok-8c1f5e2a9b7d4e60"

    @Test func aTokenEchoedByTheBackendIsInNoOutput() async throws {
        // 409 holds the item with the body as its reason; 401 retries it.
        let fixture = try DaemonFixture { request in
            let echo = "you sent Authorization: \(request.header("Authorization") ?? "")"
            return request.body.contains(UInt8(ascii: "h")) ? .status(409, body: echo) : .status(401, body: echo)
        }
        _ = fixture.directory.write(Self.token + "\n", to: "token", mode: 0o600)
        try fixture.writeConfig("[Backend]\nBearerTokenFile=\(fixture.directory.path)/token\n")
        let daemon = try await fixture.start()
        try fixture.drop(#"{"id":"held","version":1,"payload":{"n":"h"}}"#)
        try fixture.drop(#"{"id":"retried","version":1,"payload":{"n":1}}"#)
        #expect(await fixture.eventually { fixture.names("hold").contains("held.reason")
                && fixture.names("queue").contains("retried.state") })
        #expect(fixture.server.requests.allSatisfy { $0.header("Authorization") == "Bearer \(Self.token)" },
                "the backend did get the token")

        var outputs: [(String, String)] = []
        outputs.append(("hold/held.reason", fixture.read("spool/hold/held.reason")))
        outputs.append(("queue/retried.state", fixture.read("spool/queue/retried.state")))
        for arguments in [["list", "hold"], ["show", "held"], ["list"], ["show", "retried"], ["status"], ["status", "--json"],
                          ["list", "hold", "--json"]] {
            let answer = try await fixture.cli(arguments)
            outputs.append((arguments.joined(separator: " "), answer.stdout + answer.stderr))
        }
        outputs.append(("the daemon's log", daemon.stderr))
        outputs.append(("txrecon.status", fixture.read("spool/txrecon.status")))
        outputs.append(("STATUS", fixture.notify.messages.compactMap { $0.value(of: "STATUS") }.joined(separator: "\n")))
        #expect(outputs[0].1.contains("you sent Authorization: Bearer <redacted>"), "\(outputs[0].1)")
        for (name, text) in outputs {
            #expect(!text.contains(Self.token), "\(name) holds the token:\n\(text)")
        }
    }

    /// curl quotes a proxy setting it cannot parse, password and all, in
    /// the error that becomes the attempt's reason.
    @Test func aProxysPasswordCurlQuotesIsInNoOutput() async throws {
        let fixture = try DaemonFixture()
        let proxy = "http://carol:pa#ss-2f9c@proxy.invalid:3128"
        let daemon = try await fixture.start(environment: ["http_proxy": proxy])
        try fixture.drop(fixture.envelope("via-proxy", version: 1))
        #expect(await fixture.eventually { fixture.names("queue").contains("via-proxy.state") })
        let reason = fixture.read("spool/queue/via-proxy.state")
        #expect(reason.contains("proxy") || reason.contains("<redacted>"), "curl's message is kept, redacted: \(reason)")
        for (what, text) in [("queue/via-proxy.state", reason), ("the daemon's log", daemon.stderr),
                             ("txrecon.status", fixture.read("spool/txrecon.status")),
                             ("STATUS", fixture.notify.messages.compactMap { $0.value(of: "STATUS") }.joined())] {
            #expect(!text.contains("pa#ss-2f9c") && !text.contains("carol:"), "\(what): \(text)")
        }
    }

    @Test func checkConfigAndTheReadyLineNeverShowTheURLsQuery() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", url: fixture.server.url + "in?api_key=q-secret-7731")
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("URL=\(fixture.server.url)in?<redacted>"), "\(check.stdout)")
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("a", version: 1))
        #expect(await fixture.server.waitForRequests(count: 1, timeout: .seconds(20)))
        #expect(fixture.server.requests.first?.path.hasSuffix("?api_key=q-secret-7731") == true)
        #expect(daemon.stderr.contains("backend \(fixture.server.url)in?<redacted>"))
        #expect(!daemon.stderr.contains("q-secret-7731") && !check.stdout.contains("q-secret-7731"))
    }

    @Test func aTLSFileThatCannotWorkStopsCheckConfigTheStartAndAReload() async throws {
        let fixture = try DaemonFixture()
        _ = fixture.directory.write("garbage\n", to: "ca.pem")
        try fixture.writeConfig("[Backend]\nCAFile=\(fixture.directory.path)/ca.pem\n")
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 78)
        #expect(check.stderr.contains(":12: Backend.CAFile: \(fixture.directory.path)/ca.pem holds no PEM certificates"),
                "\(check.stderr)")
        let refused = try DaemonProcess(["run", "--config", fixture.configPath], stderrPath: fixture.directory.path + "/refused.log")
        #expect(await refused.wait(timeout: .seconds(20)) == 78)

        try fixture.writeConfig("")
        let daemon = try await fixture.start()
        try fixture.writeConfig("[Backend]\nCAFile=\(fixture.directory.path)/ca.pem\n")
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually { daemon.stderr.contains("reload refused, the running configuration stays") })
        #expect(daemon.stderr.contains("Backend.CAFile"))
    }

    @Test func checkConfigReadsTheUploadTokenAndTheSweepsKeyFile() async throws {
        let fixture = try DaemonFixture()
        _ = fixture.directory.write("upload-token-1\n", to: "upload", mode: 0o644)
        try fixture.writeConfig("[Receive]\nUploadTokenFile=\(fixture.directory.path)/upload\n")
        let exposed = try await fixture.cli(["check-config"])
        #expect(exposed.status == 78)
        #expect(exposed.stderr.contains(":12: Receive.UploadTokenFile:"), "\(exposed.stderr)")

        _ = fixture.directory.write("up12\n", to: "upload", mode: 0o600)
        let short = try await fixture.cli(["check-config"])
        #expect(short.status == 78)
        #expect(short.stderr.contains(":12: Receive.UploadTokenFile: the token has 4 characters"), "\(short.stderr)")
        #expect(!short.stderr.contains("up12"), "the token is not quoted")

        _ = fixture.directory.write("upload-token-1\n", to: "upload", mode: 0o600)
        try fixture.writeConfig("[Receive]\nUploadTokenFile=\(fixture.directory.path)/upload\n"
                                + "[Sweep]\nBundleID=com.example.app\nIssuerID=57246542-96fe-1a63-e053-0824d011072a\n"
                                + "KeyID=ABC123DEFG\nPrivateKeyFile=\(fixture.directory.path)/missing.p8\n")
        let missingKey = try await fixture.cli(["check-config"])
        #expect(missingKey.status == 78)
        #expect(missingKey.stderr.contains(":17: Sweep.PrivateKeyFile:"), "\(missingKey.stderr)")
    }

    @Test func legalButUnlikelyValuesAreWarnedAboutAtStartAndByCheckConfig() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("[Backend]\nTimeout=50ms\n")
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 0)
        #expect(check.stderr.contains("txrecon: warning: [Backend] Timeout=50ms is under 100ms"), "\(check.stderr)")
        let daemon = try await fixture.start()
        #expect(daemon.stderr.contains("warning: [Backend] Timeout=50ms is under 100ms"), "\(daemon.stderr)")
    }

    @Test func aReloadAppliesWhatItCanAndSaysWhichKeysWaitForARestart() async throws {
        let fixture = try DaemonFixture()
        let daemon = try await fixture.start()
        let other = try LoopbackHTTPServer { _ in .status(200) }
        defer { other.stop() }
        try fixture.writeConfig("[Delivery]\nMaxConcurrentDeliveries=3\n[Spool]\nDoneRetention=1d\n", url: other.url + "elsewhere")
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually {
            daemon.stderr.contains("; DoneRetention=, MaxConcurrentDeliveries= changed but take effect only at a restart")
        }, "\(daemon.stderr)")
        try fixture.drop(fixture.envelope("after-reload", version: 1))
        #expect(await other.waitForRequests(count: 1, timeout: .seconds(20)), "the new URL= is in effect")
    }
}

extension DaemonFixture {
    /// A file under the fixture's directory as text; empty when missing.
    func read(_ name: String) -> String {
        (try? SystemCall.readFile(directory.path + "/" + name, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}
