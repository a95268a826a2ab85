// The built txrecon binary against a real HTTP server on 127.0.0.1 and a
// datagram socket standing in for systemd's NOTIFY_SOCKET. These tests wait
// on real processes (with timeouts), never on fixed sleeps.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

/// One daemon on a throw-away spool, talking to one loopback backend.
final class DaemonFixture {
    let directory = TemporaryDirectory("txrecon-it")
    let server: LoopbackHTTPServer
    let notify = NotifySocket()
    var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }
    /// LedgerFile=: the test's own, never the machine's /var/lib/txrecon.
    var ledgerPath: String { directory.path + "/state/ledger.sqlite3" }
    var configPath: String { directory.path + "/txrecon.conf" }
    private(set) var daemon: DaemonProcess?

    init(extraConfig: String = "", handler: @escaping LoopbackHTTPServer.Handler = { _ in .status(200) }) throws {
        server = try LoopbackHTTPServer(handler: handler)
        try writeConfig(extraConfig)
    }

    /// Verification of the real Sandbox samples (Examples/samples, the
    /// fixtures): Apple's root from Config/, their bundle id and environment,
    /// and envelopes accepted, which most tests drop.
    static func sampleVerification(bundleID: String = "com.loki-project.loki-messenger",
                                   roots: String = DaemonIntegrationTests.repositoryRoot + "/Config/AppleRootCA-G3.cer",
                                   receiptRoots: String = DaemonIntegrationTests.repositoryRoot
                                       + "/Config/AppleIncRootCertificate.cer") -> String {
        """
        [Verification]
        BundleID=\(bundleID)
        Environment=Sandbox
        RootCertificateFile=\(roots)
        ReceiptRootCertificateFile=\(receiptRoots)
        AcceptEnvelopes=yes
        """
    }

    /// Writes the configuration: `extra` is appended (a key set again there
    /// wins), then `verification`, so line numbers in `extra` stay put,
    /// and last the test's own `LedgerFile=`; `delays` is `RetryDelays=`.
    func writeConfig(_ extra: String, url: String? = nil, delays: String = "1s 2s",
                     verification: String = DaemonFixture.sampleVerification()) throws {
        let text = """
            [Spool]
            Directory=\(layout.root)

            [Backend]
            URL=\(url ?? server.url + "transactions")
            Timeout=2s

            [Delivery]
            RetryDelays=\(delays)

            \(extra)

            \(verification)

            [Spool]
            LedgerFile=\(ledgerPath)
            """
        _ = directory.write(text, to: "txrecon.conf")
    }

    /// Starts the daemon and waits for READY=1.
    @discardableResult
    /// `umask`: the daemon's (the units set UMask=0007); the test's own when nil.
    func start(environment: [String: String] = [:], umask: String? = nil) async throws -> DaemonProcess {
        let run = ["run", "--config", configPath]
        let command = umask.map { ["/bin/sh", "-c", "umask \($0); exec \"$0\" \"$@\"", DaemonProcess.binary] + run }
            ?? [DaemonProcess.binary] + run
        let process = try DaemonProcess(command: command,
                                        environment: ["NOTIFY_SOCKET": notify.path].merging(environment) { $1 },
                                        stderrPath: directory.path + "/daemon-\(notify.messages.count).log")
        daemon = process
        let ready = await notify.waitFor({ $0.senderPID == process.pid && $0.contains("READY=1") }, timeout: .seconds(30))
        #expect(ready != nil, "READY=1 within 30 s; stderr:\n\(process.stderr)")
        return process
    }

    /// Makes `process` the fixture's daemon, stopped when the fixture goes away.
    func adopt(_ process: DaemonProcess) {
        daemon = process
    }

    /// Drops `text` into new/ the Maildir way.
    func drop(_ text: String, name: String = "drop-\(UInt32.random(in: 0...UInt32.max))") throws {
        _ = directory.write(text, to: "spool/tmp/" + name, mode: 0o640)
        #expect(rename(layout.tmp + "/" + name, layout.new + "/" + name) == 0)
    }

    func envelope(_ id: String, version: Int) -> String {
        #"{"id":"\#(id)","version":\#(version),"payload":{"amount":"9.99"}}"#
    }

    func names(_ directory: String) -> [String] {
        ((try? SystemCall.listDirectory(layout.root + "/" + directory)) ?? []).sorted()
    }

    /// done/ without the failure records (KEY.state) kept beside items
    /// that were retried before they were delivered.
    func doneItems() -> [String] {
        names("done").filter { !$0.hasSuffix(".state") }
    }

    /// Waits until `condition` holds (checked every 20 ms), up to `timeout`.
    func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
        await TxReconIntegrationTests.eventually(timeout: timeout, condition)
    }

    func cli(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await DaemonProcess.run(arguments + ["--config", configPath], in: directory.path)
    }

    deinit {
        daemon?.terminate()
        server.stop()
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct DaemonIntegrationTests {
    static let samples = Self.repositoryRoot + "/Examples/samples"
    static var repositoryRoot: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }

    @Test func filesDroppedInNewAreDeliveredAndMoveToDone() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        try fixture.drop(fixture.envelope("order-1", version: 3))
        let transaction = try SystemCall.readFile(Self.samples + "/01-transaction.jws", limit: 1 << 20)
        try fixture.drop(String(decoding: transaction, as: UTF8.self))
        #expect(await fixture.server.waitForRequests(count: 2, timeout: .seconds(20)))
        // A delivery from new/ links the file into done/, then unlinks its old name.
        #expect(await fixture.eventually {
            fixture.doneItems().count == 2 && fixture.names("queue").isEmpty && fixture.names("new").isEmpty
        })
        let envelope = try #require(fixture.server.requests.first { $0.header("Idempotency-Key") == "order-1:3" })
        #expect(envelope.method == "POST")
        #expect(envelope.header("Content-Type") == "application/json")
        #expect(envelope.header("User-Agent") == "txrecon/\(TxReconVersion.current)")
        let body = try JSONValue.parse(envelope.body)
        #expect(body["id"] == .string("order-1"))
        #expect(body["kind"] == .string("envelope"))
        #expect(body["attempt"]?.int64Value == 1)
        #expect(body["payload"] == .object([("amount", .string("9.99"))]))
        let apple = try #require(fixture.server.requests.first { $0.header("Idempotency-Key") != "order-1:3" })
        let appleBody = try JSONValue.parse(apple.body)
        #expect(appleBody["kind"] == .string("appstore.transaction"))
        #expect(appleBody["signedTransactionInfo"]?.stringValue
            == String(decoding: transaction, as: UTF8.self).trimmingASCIISpaces().split(separator: "\n").first.map(String.init))
    }

    /// curl is told "no proxy" once only when the environment names none
    /// (CurlOptions.proxyFromEnvironment): with http_proxy set, requests
    /// still go through it, as curl's own lookup would send them.
    /// DoneRetention=0 keeps a delivered snapshot in done/ until the
    /// ledger holds it: with the ledger unusable (its directory is a
    /// file), an older snapshot arriving after the delivery is superseded
    /// there, never delivered after the newer one.
    @Test func withNoRetentionAnOlderSnapshotAfterADeliveryIsSupersededEvenWithoutALedger() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("[Spool]\nDoneRetention=0\n")
        _ = fixture.directory.write("not a directory", to: "state")
        try await fixture.start()
        try fixture.drop(fixture.envelope("refunded", version: 7))
        #expect(await fixture.eventually { fixture.doneItems() == ["refunded"] })
        try fixture.drop(fixture.envelope("refunded", version: 6))
        #expect(await fixture.eventually { fixture.names("done").contains { $0.hasPrefix("refunded.superseded-6") } },
                "\(fixture.names("done"))")
        #expect(fixture.server.requests.compactMap { $0.header("Idempotency-Key") } == ["refunded:7"])
    }

    @Test func aProxyNamedInTheEnvironmentCarriesTheRequests() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("", url: "http://backend.invalid/transactions")
        try await fixture.start(environment: ["http_proxy": fixture.server.url])
        try fixture.drop(fixture.envelope("via-proxy", version: 1))
        #expect(await fixture.server.waitForRequests(count: 1, timeout: .seconds(20)))
        #expect(fixture.server.requests.first?.path == "http://backend.invalid/transactions")
        #expect(await fixture.eventually { fixture.doneItems() == ["via-proxy"] })
    }

    @Test func readyStatusWatchdogAndStoppingReachTheNotifySocket() async throws {
        let fixture = try DaemonFixture()
        let daemon = try await fixture.start(environment: ["WATCHDOG_USEC": "200000"])
        let ping = await fixture.notify.waitFor({ $0.senderPID == daemon.pid && $0.contains("WATCHDOG=1") },
                                                 timeout: .seconds(10))
        #expect(ping != nil)
        let status = fixture.notify.messages.compactMap { $0.value(of: "STATUS") }.last
        #expect(status?.contains("0 queued") == true)
        daemon.signal(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(10)) == 0)
        #expect(fixture.notify.messages.contains { $0.contains("STOPPING=1") })
    }

    @Test func aWedgedEngineStopsTheWatchdogPings() async throws {
        let fixture = try DaemonFixture()
        let daemon = try await fixture.start(environment: ["WATCHDOG_USEC": "200000", "TXRECON_TEST_FREEZE": "1"])
        let isPing: @Sendable (NotifyMessage) -> Bool = { $0.senderPID == daemon.pid && $0.contains("WATCHDOG=1") }
        #expect(await fixture.notify.waitFor(isPing, timeout: .seconds(10)) != nil)
        daemon.signal(SIGUSR2)
        #expect(await fixture.eventually { daemon.stderr.contains("test freeze requested") })
        // At most one ping was already under way; after that, silence for
        // ten ping intervals (a real systemd would have killed it by now).
        let frozenAt = fixture.notify.messages.count
        _ = await fixture.notify.waitFor(isPing, from: frozenAt, timeout: .milliseconds(150))
        let settled = fixture.notify.messages.count
        #expect(await fixture.notify.waitFor(isPing, from: settled, timeout: .seconds(1)) == nil)
        daemon.signal(SIGKILL)
        _ = await daemon.wait(timeout: .seconds(10))
    }

    @Test func badFilesAreRejectedWithReasonsWhileGoodOnesAreDelivered() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        try fixture.drop("{not json", name: "broken.json")
        try fixture.drop(fixture.envelope("good-1", version: 1))
        try fixture.drop("", name: "empty")
        #expect(symlink("/etc/passwd", fixture.layout.new + "/link") == 0)
        try fixture.drop(fixture.envelope("good-2", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["good-1", "good-2"] })
        #expect(await fixture.eventually {
            fixture.names("rejected") == ["broken.json", "broken.json.reason", "empty", "empty.reason", "link", "link.reason"]
        })
        let reason = try SystemCall.readFile(fixture.layout.rejected + "/broken.json.reason", limit: 65536)
        #expect(String(decoding: reason, as: UTF8.self).hasPrefix("not-json: "))
        let listing = try await fixture.cli(["list", "rejected"])
        #expect(listing.status == 0)
        #expect(listing.stdout.contains("broken.json"))
    }

    @Test func releaseAndRetryWorkThroughCtl() async throws {
        let refused = Mutex(true)
        let fixture = try DaemonFixture(extraConfig: "") { request in
            let key = request.header("Idempotency-Key") ?? ""
            if key.hasPrefix("held:"), refused.withLock({ $0 }) { return .status(422, body: "unknown sku") }
            if key.hasPrefix("slow:"), refused.withLock({ $0 }) { return .status(503) }
            return .status(200)
        }
        try fixture.writeConfig("", url: nil)
        try await fixture.start()
        try fixture.drop(fixture.envelope("held", version: 1))
        #expect(await fixture.eventually { fixture.names("hold") == ["held", "held.reason"] })
        let shown = try await fixture.cli(["show", "held"])
        #expect(shown.stdout.contains("HTTP 422: unknown sku"))
        refused.withLock { $0 = false }
        let released = try await fixture.cli(["release", "held"])
        #expect(released.status == 0, "\(released.stderr)")
        #expect(released.stdout.contains("held: released"))
        #expect(await fixture.eventually { fixture.doneItems() == ["held"] })

        refused.withLock { $0 = true }
        try fixture.writeConfig("", url: nil)
        try fixture.drop(fixture.envelope("slow", version: 1))
        #expect(await fixture.eventually { fixture.names("queue").contains("slow.state") })
        refused.withLock { $0 = false }
        let retried = try await fixture.cli(["retry", "--all"])
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(await fixture.eventually { fixture.doneItems().contains("slow") })
    }

    @Test func aConfigurationErrorExitsWith78NamingFileLineAndKey() async throws {
        let fixture = try DaemonFixture()
        try fixture.writeConfig("[Delivery]\nMaxConcurrentDeliveries=0\n")
        let process = try DaemonProcess(["run", "--config", fixture.configPath],
                                        stderrPath: fixture.directory.path + "/bad.log")
        #expect(await process.wait(timeout: .seconds(20)) == 78)
        #expect(process.stderr.contains("txrecon.conf:12: Delivery.MaxConcurrentDeliveries"))
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 78)
    }

    @Test func aRestartKeepsQueuedItemsAndDeliversThemLater() async throws {
        let down = Mutex(true)
        let fixture = try DaemonFixture { _ in down.withLock { $0 } ? .status(503) : .status(204) }
        let first = try await fixture.start()
        try fixture.drop(fixture.envelope("kept", version: 1))
        #expect(await fixture.eventually { fixture.names("queue") == ["kept", "kept.state"] })
        first.signal(SIGTERM)
        #expect(await first.wait(timeout: .seconds(10)) == 0)
        down.withLock { $0 = false }
        try await fixture.start()
        #expect(await fixture.eventually { fixture.names("done") == ["kept", "kept.state"] },
                "the failure record goes with the item into done/")
    }

    @Test func readyDoesNotWaitForABacklogInNewLargerThanTheEngineTakesAtOnce() async throws {
        // 104 more than the 4,096 that may wait in new/: the start-up scan
        // must wait for room (the backend answers nothing), and READY=1 comes
        // then, not once the scan has taken the last drop.
        let fixture = try DaemonFixture { _ in .hang }
        let window = DeliveryEngine.Settings().inboxWindow
        let count = window + 104
        for index in 0..<count {
            fixture.directory.write(fixture.envelope("b\(index)", version: 1), to: "spool/new/b\(index)", mode: 0o640)
        }
        let daemon = try await fixture.start()
        // The 4,096 wait in new/ for their first attempt (not accepted into
        // queue/ yet); the 104 beyond the window are accepted into queue/
        // once the scan, after a second of waiting, stops waiting for room.
        let lines = { daemon.stderr.split(separator: "\n") }
        let isAccepted = { (line: Substring) in line.contains(": accepted envelope") }
        #expect(await fixture.eventually { lines().contains { $0.contains("ready: spool") } })
        #expect(lines().prefix { !$0.contains("ready: spool") }.count(where: isAccepted) == 0,
                "READY=1 once the window was full, before the rest of new/ was read")
        #expect(await fixture.eventually { lines().count(where: isAccepted) >= count - window },
                "the scan goes on after READY=1 and takes every drop")
        // new/ listed before queue/: a drop that moves between the two
        // listings (its first attempt timed out) shows in both, once each.
        let inNew = Set(fixture.names("new"))
        let inQueue = Set(fixture.names("queue").filter { !$0.hasSuffix(".state") })
        #expect(inNew.union(inQueue) == Set((0..<count).map { "b\($0)" }))
    }

    @Test func sighupReloadsTheConfigurationAndRefusesABadOne() async throws {
        let fixture = try DaemonFixture()
        let daemon = try await fixture.start()
        let other = try LoopbackHTTPServer { _ in .status(200) }
        defer { other.stop() }
        try fixture.writeConfig("", url: other.url + "elsewhere")
        let before = fixture.notify.messages.count
        daemon.signal(SIGHUP)
        #expect(await fixture.notify.waitFor({ $0.contains("READY=1") }, from: before, timeout: .seconds(10)) != nil,
                "\(daemon.stderr)\n\(fixture.notify.messages[before...])")
        #expect(fixture.notify.messages[before...].contains { $0.contains("RELOADING=1") })
        try fixture.drop(fixture.envelope("after-reload", version: 1))
        #expect(await other.waitForRequests(count: 1, timeout: .seconds(20)))
        try fixture.writeConfig("[Delivery]\nNoSuchKey=1\n")
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually { daemon.stderr.contains("reload refused") })
        try fixture.drop(fixture.envelope("still-running", version: 1))
        #expect(await other.waitForRequests(count: 2, timeout: .seconds(20)))
    }

    @Test func submitDropsFilesThatTheDaemonDelivers() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        _ = fixture.directory.write(fixture.envelope("submitted", version: 2), to: "item.json")
        let submitted = try await fixture.cli(["submit", fixture.directory.path + "/item.json"])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        #expect(await fixture.eventually { fixture.doneItems() == ["submitted"] })
        let status = try await fixture.cli(["status", "--json"])
        let document = try JSONValue.parse(status.stdout)
        #expect(document["done"]?.int64Value == 1)
        #expect(document["new"]?.int64Value == 0)
        #expect(document["daemon"]?["pid"]?.int64Value == Int64(fixture.daemon!.pid))
    }

    /// Under the units' UMask=0007, what the daemon writes beside the items
    /// (the status file, a failure record) is readable by group txrecon,
    /// its producers, and writable by none of them: a fake status line or a
    /// failure record rewritten would mislead the operator and the schedule.
    @Test func filesTheDaemonWritesAreNotWritableByItsGroup() async throws {
        let fixture = try DaemonFixture(handler: { _ in .status(503) })
        try await fixture.start(umask: "0007")
        try fixture.drop(fixture.envelope("failing", version: 1))
        #expect(await fixture.eventually { fixture.names("queue").contains("failing.state") })
        for path in [fixture.layout.statusFile, fixture.layout.queue + "/failing.state"] {
            let info = try #require(try SystemCall.linkStatus(path))
            #expect(info.st_mode & 0o777 == 0o640, "\(path): mode \(String(info.st_mode & 0o777, radix: 8))")
        }
    }

    /// The daemon reads a drop root wrote through group txrecon: submit's
    /// file is 0640 whatever the operator's umask (077 on hardened hosts).
    @Test func submitUnderAStrictUmaskLeavesADropTheDaemonCanRead() async throws {
        let fixture = try DaemonFixture()
        try fixture.layout.createMissingDirectories()
        _ = fixture.directory.write(fixture.envelope("strict", version: 1), to: "item.json")
        let stderrPath = fixture.directory.path + "/submit.err"
        let submit = try DaemonProcess(command: ["/bin/sh", "-c", "umask 077; exec \"$0\" \"$@\"", DaemonProcess.binary,
                                                 "submit", fixture.directory.path + "/item.json",
                                                 "--config", fixture.configPath], stderrPath: stderrPath)
        #expect(await submit.wait(timeout: .seconds(60)) == 0, "\(String(decoding: (try? SystemCall.readFile(stderrPath, limit: 1 << 16)) ?? [], as: UTF8.self))")
        let names = fixture.names("new")
        #expect(names.count == 1)
        let info = try #require(try SystemCall.linkStatus(fixture.layout.new + "/" + (names.first ?? "")))
        #expect(info.st_mode & 0o777 == 0o640, "mode \(String(info.st_mode & 0o777, radix: 8))")
    }
}
