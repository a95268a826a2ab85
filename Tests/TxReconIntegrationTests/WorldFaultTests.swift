// Faults of the world, against the built binary: a backend that is down,
// refuses connections, hangs, answers garbage, cannot be resolved or shows an
// untrusted certificate; a spool that fills up, disappears or becomes
// inaccessible. Each test waits on real processes with timeouts; the short
// RetryDelays= keep them to seconds.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

extension DaemonFixture {
    /// queue/KEY.state as the daemon last wrote it.
    func state(of key: String) -> DeliveryState? {
        guard let bytes = try? SystemCall.readFile(layout.queue + "/" + key + ".state", limit: 65536) else { return nil }
        return DeliveryState(json: bytes)
    }

    /// Every STATUS= the daemon sent so far.
    var statusLines: [String] { notify.messages.compactMap { $0.value(of: "STATUS") } }

    /// Attempts the backend received for `key` (any version).
    func attempts(of key: String) -> Int {
        server.requests.filter { $0.header("Idempotency-Key")?.hasPrefix(key + ":") == true }.count
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct WorldFaultTests {
    @Test func aBackendDownForAWhileIsOnlyProbedAndDeliveryResumesWithoutRestart() async throws {
        let down = Mutex(true)
        let fixture = try DaemonFixture { _ in down.withLock { $0 } ? .status(503) : .status(200) }
        try fixture.writeConfig("[Backend]\nProbeDelays=300ms", delays: "200ms 400ms 800ms")
        let daemon = try await fixture.start()
        let keys = (1...10).map { "d\($0)" }
        for key in keys { try fixture.drop(fixture.envelope(key, version: 1)) }
        #expect(await fixture.eventually { fixture.statusLines.last?.contains("backend failing since") == true })
        #expect(await fixture.eventually { fixture.statusLines.last?.contains("next probe at") == true })
        let before = fixture.server.requests.count
        let since = ContinuousClock.now
        #expect(await fixture.eventually { fixture.server.requests.count >= before + 6 }, "six probes")
        let probes = fixture.server.requests.count - before
        let elapsed = ContinuousClock.now - since
        // Each of the ten keys' own schedule (200 ms, 400 ms, 800 ms) would
        // have sent it about twice in that time: the probes send one request
        // per 300 ms step, whatever the number of keys.
        #expect(probes <= Int(elapsed / .milliseconds(300)) + 2, "\(probes) requests in \(elapsed)")
        down.withLock { $0 = false }
        #expect(await fixture.eventually { fixture.doneItems() == keys.sorted() })
        #expect(await fixture.eventually { fixture.statusLines.last?.contains("backend ok") == true })
        #expect(daemon.stderr.contains("backend failing: HTTP 503"))
        #expect(daemon.stderr.contains("one probe at a time goes to it"))
        #expect(daemon.stderr.contains("backend recovered after failing for"))
        #expect(await daemon.wait(timeout: .zero) == nil, "the same process delivered them: no restart")
    }

    @Test func aRefusedConnectionIsRetriedUntilTheBackendListensAgain() async throws {
        let fixture = try DaemonFixture()
        // A port held bound but not listening refuses every connection, and
        // no other test's server can take it meanwhile (a port merely freed
        // could be, and then answered in the backend's place).
        let refusing = try ClosedPort()
        let port = refusing.number
        try fixture.writeConfig("", url: "http://127.0.0.1:\(port)/transactions", delays: "200ms 400ms")
        try await fixture.start()
        try fixture.drop(fixture.envelope("refused", version: 1))
        #expect(await fixture.eventually { fixture.state(of: "refused")?.lastError?.hasPrefix("connection failed") == true },
                "\(String(describing: fixture.state(of: "refused")))")
        refusing.release()
        var back: LoopbackHTTPServer?
        for _ in 0..<100 where back == nil {
            back = try? LoopbackHTTPServer(port: port) { _ in .status(200) }
            if back == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let server = try #require(back, "port \(port) free again")
        defer { server.stop() }
        #expect(await fixture.eventually { fixture.doneItems() == ["refused"] })
        #expect(server.requests.count == 1)
    }

    @Test func aBackendThatNeverAnswersTimesOutWhileOtherKeysKeepFlowing() async throws {
        let stuck = Mutex(true)
        let fixture = try DaemonFixture { request in
            request.header("Idempotency-Key") == "stuck:1" && stuck.withLock({ $0 }) ? .hang : .status(200)
        }
        // A timeout long enough that a busy host still gets the others
        // through first; what is checked is the order, not a time.
        try fixture.writeConfig("[Backend]\nTimeout=8s")
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("stuck", version: 1))
        #expect(await fixture.server.waitForRequests(count: 1, timeout: .seconds(10)))
        for key in ["f1", "f2", "f3"] { try fixture.drop(fixture.envelope(key, version: 1)) }
        #expect(await fixture.eventually { fixture.doneItems() == ["f1", "f2", "f3"] })
        #expect(!daemon.stderr.contains("stuck: attempt 1 failed"),
                "the others are delivered before the stuck attempt even times out")
        #expect(await fixture.eventually { fixture.state(of: "stuck")?.lastError?.hasPrefix("timed out") == true })
        stuck.withLock { $0 = false }
        #expect(await fixture.eventually { fixture.doneItems().contains("stuck") })
    }

    @Test func garbageAndTruncatedAnswersAreRetriedAsUnreadable() async throws {
        let answered = Mutex(Set<String>())
        let fixture = try DaemonFixture { request in
            let key = request.header("Idempotency-Key") ?? ""
            guard answered.withLock({ $0.insert(key).inserted }) else { return .status(200) }
            return key.hasPrefix("garbage:") ? .garbage("no HTTP here\r\n\r\n") : .truncated
        }
        try fixture.writeConfig("", delays: "200ms")
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("garbage", version: 1))
        try fixture.drop(fixture.envelope("truncated", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["garbage", "truncated"] })
        #expect(fixture.attempts(of: "garbage") == 2)
        #expect(fixture.attempts(of: "truncated") == 2)
        let lines = daemon.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains("garbage: attempt 1 failed (unreadable response") })
        #expect(lines.contains { $0.contains("truncated: attempt 1 failed (unreadable response") })
    }

    @Test func anUnresolvableHostIsRetriedAsANameResolutionFailure() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", url: "http://nonexistent.invalid/transactions", delays: "200ms 400ms")
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("dns", version: 1))
        #expect(await fixture.eventually {
            (fixture.state(of: "dns")?.attempts ?? 0) >= 2
                && fixture.state(of: "dns")?.lastError?.hasPrefix("name resolution failed") == true
        }, "\(String(describing: fixture.state(of: "dns")))")
        try fixture.writeConfig("", delays: "200ms 400ms")
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually { fixture.doneItems() == ["dns"] })
    }

    @Test func anUntrustedCertificateIsRetriedAndLoggedAsATLSFailure() async throws {
        let fixture = try DaemonFixture()
        let directory = fixture.directory.path
        let made = try await DaemonProcess.run(command: [
            "/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ], in: directory)
        #expect(made.status == 0, "openssl req: \(made.stderr)")
        let tlsServer = try DaemonProcess(command: [
            "/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", directory + "/cert.pem",
            "-key", directory + "/key.pem", "-www",
        ], stderrPath: directory + "/s_server.log")
        defer {
            tlsServer.terminate()
        }
        #expect(await fixture.eventually { tlsServer.stdout.contains("ACCEPT") })
        let accept = try #require(tlsServer.stdout.split(separator: "\n").first { $0.hasPrefix("ACCEPT") })
        let port = try #require(accept.split(separator: ":").last.map(String.init))
        try fixture.writeConfig("", url: "https://127.0.0.1:\(port)/transactions", delays: "200ms 400ms")
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("tls", version: 1))
        #expect(await fixture.eventually {
            (fixture.state(of: "tls")?.attempts ?? 0) >= 3
                && fixture.state(of: "tls")?.lastError?.hasPrefix("TLS failure") == true
        }, "\(String(describing: fixture.state(of: "tls")))")
        #expect(fixture.doneItems() == [], "verification is never skipped")
        #expect(daemon.stderr.contains("tls: attempt 1 failed (TLS failure"))
    }

    @Test func theSpoolRemovedWhileRunningEndsTheDaemonWithStatus1AndARestartRecreatesIt() async throws {
        let fixture = try DaemonFixture()
        let daemon = try await fixture.start()
        // The daemon may write its status file into the root while rm works,
        // which makes rm find the root not empty: remove until it is gone.
        var removed: Int32 = -1
        for _ in 1...5 where removed != 0 {
            removed = try await DaemonProcess.run(command: ["/bin/rm", "-rf", fixture.layout.root],
                                                  in: fixture.directory.path).status
        }
        #expect(removed == 0)
        #expect(await daemon.wait(timeout: .seconds(10)) == 1)
        #expect(daemon.stderr.contains("disappeared or was moved away; exiting so that systemd restarts txrecon"))
        try await fixture.start()
        try fixture.drop(fixture.envelope("after", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["after"] })
    }
}

extension DaemonProcess {
    /// Runs any command to completion; returns its status and output.
    static func run(command: [String], in directory: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        let path = directory + "/command-\(UInt32.random(in: 0...UInt32.max)).err"
        let process = try DaemonProcess(command: command, stderrPath: path)
        let status = await process.wait(timeout: .seconds(60)) ?? -1
        return (status, process.stdout, process.stderr)
    }
}
