// The built `txrecon receive` on 127.0.0.1, with the daemon where the test
// follows bodies to the backend: every answer of the contract, durability
// before 200, the limits against abuse, a full spool.
import FoundationEssentials
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

/// A receiver (and, when asked, the daemon) on one spool.
final class ReceiverFixture {
    let daemon: DaemonFixture
    let port: UInt16
    private(set) var receiver: DaemonProcess?

    init(receive: String = "", verification: String = DaemonFixture.sampleVerification(), spool: String = "",
         backend: @escaping LoopbackHTTPServer.Handler = { _ in .status(200) }) throws {
        daemon = try DaemonFixture(handler: backend)
        port = LoopbackPort.unused()
        try daemon.writeConfig("""
            [Receive]
            Listen=127.0.0.1:\(port)
            \(receive)
            \(spool)
            """, verification: verification)
    }

    var layout: SpoolLayout { daemon.layout }

    /// Starts `txrecon receive` and waits for READY=1.
    @discardableResult
    func start(environment: [String: String] = [:]) async throws -> DaemonProcess {
        try layout.createMissingDirectories()
        let process = try DaemonProcess(["receive", "--config", daemon.configPath],
                                        environment: ["NOTIFY_SOCKET": daemon.notify.path].merging(environment) { $1 },
                                        stderrPath: daemon.directory.path + "/receive-\(UInt32.random(in: 0...UInt32.max)).log")
        receiver = process
        let ready = await daemon.notify.waitFor({ $0.senderPID == process.pid && $0.contains("READY=1") },
                                                timeout: .seconds(30))
        #expect(ready != nil, "READY=1 within 30 s; stderr:\n\(process.stderr)")
        return process
    }

    func post(_ path: String, _ body: [UInt8], headers: [(String, String)] = []) async throws -> HTTPReply {
        try await LoopbackHTTPClient.send(port: port, path: path, body: body, headers: headers)
    }

    func post(_ path: String, sample: String, headers: [(String, String)] = []) async throws -> HTTPReply {
        try await post(path, try SystemCall.readFile(DaemonIntegrationTests.samples + "/" + sample, limit: 1 << 20),
                       headers: headers)
    }

    deinit { receiver?.terminate() }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct ReceiverIntegrationTests {
    @Test func applesSandboxNotificationsReachTheBackendThroughTheDaemon() async throws {
        let fixture = try ReceiverFixture()
        try await fixture.start()
        try await fixture.daemon.start()
        for sample in ["03-notification-did-renew.json", "04-notification-refund.json", "05-notification-test.json"] {
            let reply = try await fixture.post("/appstore/notifications", sample: sample)
            #expect(reply.status == 200, "\(sample): \(reply.body)")
            let spooled = try JSONValue.parse(Array(reply.body.utf8))["spooled"]?.stringValue
            #expect(spooled?.isEmpty == false)
        }
        #expect(await fixture.daemon.server.waitForRequests(count: 3, timeout: .seconds(20)))
        #expect(fixture.daemon.names("rejected").isEmpty)
        #expect(fixture.daemon.server.requests.allSatisfy {
            (try? JSONValue.parse($0.body))?["kind"] == .string("appstore.notification")
        })
    }

    @Test func aForgedNotificationIsRefusedAndNeverTouchesTheDisk() async throws {
        let fixture = try ReceiverFixture()
        try await fixture.start()
        let transaction = try SystemCall.readFile(DaemonIntegrationTests.samples + "/08-forged-transaction.jws", limit: 65536)
        let forged = JSONValue.object([("signedPayload", .string(String(decoding: transaction, as: UTF8.self)
            .trimmingASCIISpaces()))]).serialized
        let reply = try await fixture.post("/appstore/notifications", forged)
        #expect(reply.status == 400 || reply.status == 422, "\(reply.status) \(reply.body)")
        let tampered = try SystemCall.readFile(DaemonIntegrationTests.samples + "/04-notification-refund.json", limit: 65536)
        var bytes = tampered
        let at = try #require(bytes.firstRange(of: Array(".".utf8))).lowerBound + 40
        bytes[at] = bytes[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let refused = try await fixture.post("/appstore/notifications", bytes)
        #expect(refused.status == 422 || refused.status == 400, "\(refused.status) \(refused.body)")
        #expect(try JSONValue.parse(Array(refused.body.utf8))["error"]?.stringValue?.isEmpty == false)
        #expect(fixture.daemon.names("new").isEmpty && fixture.daemon.names("tmp").isEmpty)
        let notJSON = try await fixture.post("/appstore/notifications", Array("hello".utf8))
        #expect(notJSON.status == 400)
        let wrongPlace = try await fixture.post("/appstore/notifications", sample: "01-transaction.jws")
        #expect(wrongPlace.status == 400, "a transaction is not a notification")
        #expect(fixture.daemon.names("new").isEmpty)
    }

    @Test func genuineDataThisConfigurationRefusesIsKeptToBeRequeued() async throws {
        let fixture = try ReceiverFixture(verification: DaemonFixture.sampleVerification(bundleID: "com.example.other"))
        try await fixture.start()
        try await fixture.daemon.start()
        let reply = try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json")
        #expect(reply.status == 200, "\(reply.body)")
        #expect(try JSONValue.parse(Array(reply.body.utf8))["setAside"]?.stringValue?.hasPrefix("wrong-bundle-id") == true)
        #expect(await fixture.daemon.eventually { fixture.daemon.names("rejected").count == 2 })
        #expect(fixture.daemon.server.requests.isEmpty)
    }

    @Test func refusedGenuineDataIsAnswered503WhileRejectedHoldsItsQuota() async throws {
        let fixture = try ReceiverFixture(receive: "RejectedQuota=2\nMaxRequestsPerSecondPerAddress=0",
                                          verification: DaemonFixture.sampleVerification(bundleID: "com.example.other"))
        try fixture.layout.createMissingDirectories()
        // Two set-aside files and their reasons: the quota is full.
        for name in ["earlier-1", "earlier-2"] {
            _ = fixture.daemon.directory.write("{}", to: "spool/rejected/" + name)
            _ = fixture.daemon.directory.write("wrong-bundle-id\n", to: "spool/rejected/" + name + ".reason")
        }
        try await fixture.start()
        let full = try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json")
        #expect(full.status == 503 && full.header("Retry-After") == "3600", "\(full.status) \(full.body)")
        #expect(full.body.contains("rejected-quota"), "\(full.body)")
        #expect(fixture.daemon.names("new").isEmpty, "not spooled")

        // An operator deals with them; the count catches up within about a second.
        for name in fixture.daemon.names("rejected") {
            #expect(unlink(fixture.layout.rejected + "/" + name) == 0)
        }
        var kept: HTTPReply?
        let deadline = ContinuousClock.now + .seconds(30)
        while kept == nil, ContinuousClock.now < deadline {
            let reply = try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json")
            #expect(reply.status == 200 || reply.status == 503, "\(reply.status) \(reply.body)")
            if reply.status == 200 { kept = reply } else { try await Task.sleep(for: .milliseconds(50)) }
        }
        let reply = try #require(kept, "answered 200 again once rejected/ had room")
        #expect(try JSONValue.parse(Array(reply.body.utf8))["setAside"]?.stringValue?.hasPrefix("wrong-bundle-id") == true)
        #expect(fixture.daemon.names("new").count == 1)
    }

    @Test func refusedGenuineDataOnItsWayToRejectedCountsAgainstTheQuota() async throws {
        // The daemon is not running: what the receiver sets aside waits in
        // new/. Replays of one genuine notification for another app must
        // not fill the disk past RejectedQuota= meanwhile.
        let fixture = try ReceiverFixture(receive: "RejectedQuota=2\nMaxRequestsPerSecondPerAddress=0",
                                          verification: DaemonFixture.sampleVerification(bundleID: "com.example.other"))
        try await fixture.start()
        var statuses: [Int] = []
        for _ in 0..<5 {
            statuses.append(try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json").status)
        }
        #expect(statuses == [200, 200, 503, 503, 503], "\(statuses)")
        #expect(fixture.daemon.names("new").count == 2, "only the quota's worth spooled")
        #expect(fixture.daemon.names("rejected").isEmpty)
    }

    @Test func aReceiverThatChecksNoSignatureSaysSoAtStart() async throws {
        let fixture = try ReceiverFixture(verification: "[Verification]\nMode=none\nAcceptEnvelopes=yes\n")
        let receiver = try await fixture.start()
        #expect(receiver.stderr.contains("Mode=none: App Store signatures are not checked"), "\(receiver.stderr)")
        #expect(receiver.stderr.contains("txrecon receive spools what anyone who can reach it sends"))
    }

    @Test func refusedGenuineDataIsAnswered503WhenRejectedCannotBeCounted() async throws {
        let fixture = try ReceiverFixture(verification: DaemonFixture.sampleVerification(bundleID: "com.example.other"))
        try await fixture.start()
        #expect(rmdir(fixture.layout.rejected) == 0)
        let reply = try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json")
        #expect(reply.status == 503 && reply.header("Retry-After") == "60", "\(reply.status) \(reply.body)")
        #expect(reply.body.contains("spool-unavailable"), "\(reply.body)")
        #expect(fixture.daemon.names("new").isEmpty, "an unknown count is a full quota: not spooled")
    }

    @Test func theUploadEndpointsNeedTheTokenAndEnvelopesTheirSetting() async throws {
        let fixture = try ReceiverFixture()
        _ = fixture.daemon.directory.write("upload-s3cr3t-7\n", to: "upload-token", mode: 0o600)
        try fixture.daemon.writeConfig("""
            [Receive]
            Listen=127.0.0.1:\(fixture.port)
            UploadTokenFile=\(fixture.daemon.directory.path)/upload-token
            """)
        let receiver = try await fixture.start()
        let none = try await fixture.post("/appstore/transactions", sample: "01-transaction.jws")
        #expect(none.status == 401 && none.header("WWW-Authenticate") == "Bearer")
        let wrong = try await fixture.post("/appstore/transactions", sample: "01-transaction.jws",
                                           headers: [("Authorization", "Bearer nope")])
        #expect(wrong.status == 401)
        let right = try await fixture.post("/appstore/transactions", sample: "01-transaction.jws",
                                           headers: [("Authorization", "Bearer upload-s3cr3t-7")])
        #expect(right.status == 200, "\(right.body)")
        let envelope = try await fixture.post("/envelopes", Array(#"{"id":"e-1","version":1,"payload":{}}"#.utf8),
                                              headers: [("Authorization", "Bearer upload-s3cr3t-7")])
        #expect(envelope.status == 200, "AcceptEnvelopes=yes in the fixture: \(envelope.body)")
        let notification = try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json")
        #expect(notification.status == 200, "Apple's endpoint needs no token")
        #expect(fixture.daemon.names("new").count == 3)
        // A client that puts the token where the log shows it: the path of a 404.
        #expect(try await fixture.post("/upload-s3cr3t-7", Array("x".utf8)).status == 404)
        #expect(await fixture.daemon.eventually { receiver.stderr.contains("404 not-found") })
        #expect(!receiver.stderr.contains("upload-s3cr3t-7"), "\(receiver.stderr)")
    }

    @Test func envelopesAreNotServedWithoutAcceptEnvelopes() async throws {
        let fixture = try ReceiverFixture(verification: """
            [Verification]
            BundleID=com.loki-project.loki-messenger
            Environment=Sandbox
            RootCertificateFile=\(DaemonIntegrationTests.repositoryRoot)/Config/AppleRootCA-G3.cer
            ReceiptRootCertificateFile=\(DaemonIntegrationTests.repositoryRoot)/Config/AppleIncRootCertificate.cer
            """)
        try await fixture.start()
        let reply = try await fixture.post("/envelopes", Array(#"{"id":"e-1","version":1,"payload":{}}"#.utf8))
        #expect(reply.status == 404)
    }

    @Test func methodsPathsAndSizesOutsideTheContractAreRefused() async throws {
        let fixture = try ReceiverFixture(spool: "[Spool]\nMaxFileSize=4096")
        let receiver = try await fixture.start()
        let get = try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/appstore/notifications")
        #expect(get.status == 405 && get.header("Allow") == "POST")
        let unknown = try await fixture.post("/elsewhere", [])
        #expect(unknown.status == 404)
        let large = try await fixture.post("/appstore/notifications", Array(repeating: UInt8(ascii: "x"), count: 5000))
        #expect(large.status == 413)
        #expect(await fixture.daemon.eventually { receiver.stderr.contains("413 too-large") },
                "a 413 is logged like every other refusal: \(receiver.stderr)")
        let health = try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/healthz")
        #expect(health.status == 200)
        #expect(fixture.daemon.names("new").isEmpty)
    }

    @Test func aChunkedBodyThatGrowsPastTheLimitIsAnswered413() async throws {
        let fixture = try ReceiverFixture(spool: "[Spool]\nMaxFileSize=4096")
        try await fixture.start()
        let port = fixture.port
        // No Content-Length: the size is known only once the body passes it.
        let reply = try await DedicatedThread.run(name: "chunked") { () -> Result<[UInt8], LoopbackHTTPClient.Failure> in
            Result { () throws(LoopbackHTTPClient.Failure) in
                let socket = try LoopbackHTTPClient.connect(port: port)
                defer { close(socket) }
                try LoopbackHTTPClient.write(socket, Array(("POST /appstore/notifications HTTP/1.1\r\nHost: x\r\n"
                    + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").utf8))
                let chunk = Array(repeating: UInt8(ascii: "x"), count: 1024)
                for _ in 0..<8 {
                    try LoopbackHTTPClient.write(socket, Array("400\r\n".utf8) + chunk + Array("\r\n".utf8))
                }
                try LoopbackHTTPClient.write(socket, Array("0\r\n\r\n".utf8))
                return LoopbackHTTPClient.readAll(socket)
            }
        }.get()
        let text = String(decoding: reply, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 413"), "\(text)")
        #expect(text.contains("too-large"), "\(text)")
        #expect(fixture.daemon.names("new").isEmpty)
        let health = try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/healthz")
        #expect(health.status == 200, "the receiver serves on")
    }

    @Test func aClientThatSendsTooOftenIsAskedToWait() async throws {
        let fixture = try ReceiverFixture(receive: "MaxRequestsPerSecondPerAddress=1")
        try await fixture.start()
        let port = fixture.port
        let start = ContinuousClock.now
        let replies = try await withThrowingTaskGroup(of: HTTPReply.self) { group in
            for _ in 0..<10 {
                group.addTask { try await LoopbackHTTPClient.send(port: port, method: "GET", path: "/healthz") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - start
        let refused = replies.filter { $0.status == 429 }
        #expect(!refused.isEmpty, "\(replies.map(\.status))")
        #expect(refused.allSatisfy { $0.header("Retry-After") == "1" })
        // One a second: the first, and one more for each second the burst took.
        let served = replies.filter { $0.status == 200 }.count
        #expect(served >= 1 && served <= 1 + Int(elapsed.components.seconds) + 1, "\(served) served in \(elapsed)")
    }

    @Test func aSlowlorisClientIsCutOffWhileOthersAreServed() async throws {
        let fixture = try ReceiverFixture(receive: "RequestTimeout=2s\nIdleTimeout=1s")
        let receiver = try await fixture.start()
        let port = fixture.port
        // A byte a quarter second: never idle for IdleTimeout=, never whole.
        let cut = Mutex<ContinuousClock.Duration?>(nil)
        let slow = Task {
            try await DedicatedThread.run(name: "slowloris") { () -> Result<Void, LoopbackHTTPClient.Failure> in
                Result { () throws(LoopbackHTTPClient.Failure) in
                    let socket = try LoopbackHTTPClient.connect(port: port)
                    defer { close(socket) }
                    let start = ContinuousClock.now
                    let head = Array("POST /appstore/notifications HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8)
                    for byte in head + Array(repeating: UInt8(ascii: "a"), count: 200) {
                        do {
                            try LoopbackHTTPClient.write(socket, [byte])
                        } catch {
                            cut.withLock { $0 = ContinuousClock.now - start }
                            return
                        }
                        usleep(250_000)
                    }
                }
            }.get()
        }
        // Meanwhile others are served.
        for _ in 0..<3 {
            let reply = try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json")
            #expect(reply.status == 200)
        }
        try await slow.value
        let after = try #require(cut.withLock { $0 }, "the slow client was never cut off")
        #expect(after < .seconds(20), "cut after \(after)")
        #expect(receiver.stderr.contains("a connection from 127.0.0.1 sent no whole request within RequestTimeout="),
                "the slow client is named: \(receiver.stderr)")
    }

    /// The bytes sent on the loopback TCP connection whose client end is
    /// `socket` (to `port`) that the receiving end has not read yet: what
    /// the client end has not had acknowledged (its tx_queue in
    /// /proc/net/tcp) and what the receiving end holds unread (its
    /// rx_queue); nil while either end has no line there.
    static func unreadByPeer(of socket: Int32, port: UInt16) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0, let table = try? SystemCall.readFile("/proc/net/tcp", limit: 1 << 24) else { return nil }
        let clientPort = String(format: "%04X", UInt16(bigEndian: address.sin_port))
        let serverPort = String(format: "%04X", port)
        var unacknowledged: Int?
        var unread: Int?
        for line in String(decoding: table, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 4 else { continue }
            let queues = fields[4].split(separator: ":").compactMap { Int($0, radix: 16) }
            guard queues.count == 2 else { continue }
            if fields[1].hasSuffix(":" + clientPort), fields[2].hasSuffix(":" + serverPort) { unacknowledged = queues[0] }
            if fields[1].hasSuffix(":" + serverPort), fields[2].hasSuffix(":" + clientPort) { unread = queues[1] }
        }
        guard let unacknowledged, let unread else { return nil }
        return unacknowledged + unread
    }

    /// Whether the receiver closes `socket` within `timeout`: poll(2) for
    /// readability, then recv(2) returns 0 (or a reset). Blocks the thread.
    static func closedByPeer(_ socket: Int32, within timeout: Duration) -> Bool {
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000)
        guard poll(&entry, 1, milliseconds) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, 0) <= 0
    }

    @Test(arguments: ["MaxConnectionsPerAddress=2", "MaxConnections=2"])
    func connectionsBeyondTheLimitAreClosedWhileTheOthersAreServed(_ limit: String) async throws {
        let fixture = try ReceiverFixture(receive: "\(limit)\nIdleTimeout=60s\nRequestTimeout=120s")
        try await fixture.start()
        let port = fixture.port
        let first = try LoopbackHTTPClient.connect(port: port)
        defer { close(first) }
        let second = try LoopbackHTTPClient.connect(port: port)
        // Only once both are the receiver's does the third go over the limit.
        try LoopbackHTTPClient.write(first, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        try LoopbackHTTPClient.write(second, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let third = try LoopbackHTTPClient.connect(port: port)
        defer { close(third) }
        #expect(try await DedicatedThread.run(name: "third") { Self.closedByPeer(third, within: .seconds(20)) },
                "the connection over \(limit) was closed")
        try LoopbackHTTPClient.write(first, Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        let served = try await DedicatedThread.run(name: "first") { LoopbackHTTPClient.readAll(first) }
        #expect(String(decoding: served, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "the connections within it are served")
        close(second)
        var freed = false
        for _ in 0..<100 where !freed {
            freed = (try? await LoopbackHTTPClient.send(port: port, method: "GET", path: "/healthz"))?.status == 200
            if !freed { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(freed, "a place freed is taken again")
    }

    @Test(arguments: [("MaxConnectionsPerAddress=2", "connections_per_address", "connectionsPerAddress"),
                      ("MaxConnections=2", "connections", "connections")])
    func connectionsRefusedAtTheLimitsAreLoggedAndCounted(_ limit: String, _ label: String, _ key: String) async throws {
        let metrics = TemporaryDirectory("txrecon-receive-metrics")
        let fixture = try ReceiverFixture(receive: "\(limit)\nIdleTimeout=60s\nRequestTimeout=120s",
                                          spool: "[Metrics]\nTextfileDirectory=\(metrics.path)")
        let receiver = try await fixture.start()
        let port = fixture.port
        let first = try LoopbackHTTPClient.connect(port: port)
        defer { close(first) }
        let second = try LoopbackHTTPClient.connect(port: port)
        defer { close(second) }
        try LoopbackHTTPClient.write(first, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        try LoopbackHTTPClient.write(second, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        for _ in 0..<2 {
            let over = try LoopbackHTTPClient.connect(port: port)
            defer { close(over) }
            #expect(try await DedicatedThread.run(name: "over") { Self.closedByPeer(over, within: .seconds(20)) },
                    "the connection over \(limit) was closed")
        }
        let name = String(limit.prefix { $0 != "=" })
        #expect(await fixture.daemon.eventually {
            receiver.stderr.contains("a connection from 127.0.0.1 was refused: \(name)=")
        }, "logged, naming the client and the limit: \(receiver.stderr)")
        #expect(await fixture.daemon.eventually {
            let text = (try? SystemCall.readFile(metrics.path + "/txrecon-receive.prom", limit: 1 << 20))
                .map { String(decoding: $0, as: UTF8.self) }
            return text.flatMap { try? PrometheusExposition(parsing: $0) }?
                .value("txrecon_receive_connections_refused_total", ["limit": label]) == "2"
        }, "both counted under limit=\(label)")
        #expect(await fixture.daemon.eventually {
            ReceiverStatus.read(fixture.layout)?.json["connectionsRefused"]?[key]?.int64Value == 2
        }, "and in the status file")
    }

    @Test func healthIs503WhileNewHoldsMaxInboxFiles() async throws {
        // No daemon: nothing takes the files out of new/.
        let fixture = try ReceiverFixture(receive: "MaxInboxFiles=2")
        try fixture.layout.createMissingDirectories()
        for name in ["waiting-1", "waiting-2"] { _ = fixture.daemon.directory.write("{}", to: "spool/new/" + name) }
        try await fixture.start()
        let full = try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/healthz")
        #expect(full.status == 503 && full.header("Retry-After") != nil, "\(full.status) \(full.body)")
        #expect(full.body.contains("MaxInboxFiles="), "a reason a person understands: \(full.body)")
        #expect(try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json").status == 503,
                "as a notification would be answered")

        for name in fixture.daemon.names("new") { #expect(unlink(fixture.layout.new + "/" + name) == 0) }
        var healthy = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !healthy, ContinuousClock.now < deadline {
            healthy = try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/healthz").status == 200
            if !healthy { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(healthy, "200 again once new/ has room")
    }

    @Test(.enabled(if: getuid() == 0, "needs root: mount"))
    func healthIs503WhenTheDiskHasRoomForAByteButNotForANotification() async throws {
        let fixture = try ReceiverFixture()
        let root = fixture.layout.root
        try SystemCall.makeDirectory(root, mode: 0o755)
        try fixture.daemon.must("/bin/mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", root)
        defer { try? fixture.daemon.must("/bin/umount", "-l", root) }
        try await fixture.start()
        #expect(try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/healthz").status == 200)
        // Full, then 16 KiB free: a small file still fits, a notification
        // (the sample is 18 KiB) does not.
        let filler = open(root + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let chunk = [UInt8](repeating: 0, count: 4096)
        var size = 0
        while write(filler, chunk, chunk.count) == chunk.count { size += chunk.count }
        #expect(ftruncate(filler, off_t(size - (16 << 10))) == 0)
        close(filler)
        let probe = open(root + "/small", O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(write(probe, [0x0A], 1) == 1, "a byte still fits")
        close(probe)
        unlink(root + "/small")

        let unhealthy = try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/healthz")
        #expect(unhealthy.status == 503, "no room for one more notification: \(unhealthy.body)")
        #expect(unhealthy.body.contains("No space left on device"), "\(unhealthy.body)")
        #expect(try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json").status == 503,
                "as the notification itself is answered")
        #expect(fixture.daemon.names("tmp").isEmpty, "the probe leaves nothing behind")
        #expect(unlink(root + "/filler") == 0)
        #expect(try await LoopbackHTTPClient.send(port: fixture.port, method: "GET", path: "/healthz").status == 200)
    }

    @Test func anIdleConnectionIsClosedAfterIdleTimeout() async throws {
        let fixture = try ReceiverFixture(receive: "IdleTimeout=1s")
        try await fixture.start()
        let idle = try LoopbackHTTPClient.connect(port: fixture.port)
        defer { close(idle) }
        let start = ContinuousClock.now
        let closed = try await DedicatedThread.run(name: "idle") { Self.closedByPeer(idle, within: .seconds(30)) }
        let after = ContinuousClock.now - start
        #expect(closed, "closed within 30 s")
        #expect(after >= .milliseconds(500), "closed for being idle, not at once (\(after))")
        #expect(try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json").status == 200)
    }

    @Test func concurrentRequestsAreEachAnsweredWithTheirOwnFileInNew() async throws {
        let fixture = try ReceiverFixture()
        try await fixture.start()
        let body = try SystemCall.readFile(DaemonIntegrationTests.samples + "/04-notification-refund.json", limit: 65536)
        let port = fixture.port
        let replies = try await withThrowingTaskGroup(of: HTTPReply.self) { group in
            for _ in 0..<32 {
                group.addTask { try await LoopbackHTTPClient.send(port: port, path: "/appstore/notifications", body: body) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.allSatisfy { $0.status == 200 })
        let names = Set(replies.compactMap { try? JSONValue.parse(Array($0.body.utf8))["spooled"]?.stringValue })
        #expect(names.count == 32)
        #expect(Set(fixture.daemon.names("new")) == names, "each answered name is in new/")
    }

    @Test func aStopLetsTheRequestInFlightFinish() async throws {
        let fixture = try ReceiverFixture()
        let receiver = try await fixture.start()
        let port = fixture.port
        let body = try SystemCall.readFile(DaemonIntegrationTests.samples + "/04-notification-refund.json", limit: 65536)
        // Headers and half the body, then SIGTERM, then the rest. The signal
        // goes only once the receiver has read what was sent (its end of the
        // connection holds no unread byte): then libmicrohttpd has taken the
        // connection in and told the receiver, and the request is in flight.
        // A socket among its descriptors was not enough: under load
        // libmicrohttpd's listening thread could be stopped between accept(2)
        // and telling the receiver, which then saw nothing to wait for.
        let socket = try LoopbackHTTPClient.connect(port: port)
        defer { close(socket) }
        let head = "POST /appstore/notifications HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body.count)\r\n\r\n"
        try LoopbackHTTPClient.write(socket, Array(head.utf8) + body.prefix(body.count / 2))
        #expect(await fixture.daemon.eventually { Self.unreadByPeer(of: socket, port: port) == 0 })
        receiver.signal(SIGTERM)
        #expect(await fixture.daemon.eventually { receiver.stderr.contains("SIGTERM received") })
        try LoopbackHTTPClient.write(socket, Array(body.suffix(from: body.count / 2)))
        let reply = try await DedicatedThread.run(name: "read") { LoopbackHTTPClient.readAll(socket) }
        #expect(String(decoding: reply, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "\(String(decoding: reply, as: UTF8.self))")
        let status = await receiver.wait(timeout: .seconds(20))
        #expect(status == 0, "exit \(status.map(String.init) ?? "none within 20 s"):\n\(receiver.stderr)")
        #expect(fixture.daemon.names("new").count == 1)
    }

    @Test func statusAndMetricsCountTheAnswersAndOneReceiverServesASpool() async throws {
        let metrics = TemporaryDirectory("txrecon-receive-metrics")
        let fixture = try ReceiverFixture(spool: "[Metrics]\nTextfileDirectory=\(metrics.path)")
        let receiver = try await fixture.start()
        #expect(try await fixture.post("/appstore/notifications", sample: "04-notification-refund.json").status == 200)
        #expect(try await fixture.post("/appstore/notifications", Array("hello".utf8)).status == 400)
        #expect(try await fixture.post("/nowhere", Array("x".utf8)).status == 404)

        let second = try DaemonProcess(["receive", "--config", fixture.daemon.configPath],
                                       stderrPath: fixture.daemon.directory.path + "/second-receiver.log")
        #expect(await second.wait(timeout: .seconds(20)) == 1)
        #expect(second.stderr.contains("another txrecon receive serves this spool"), "\(second.stderr)")

        let prom = metrics.path + "/txrecon-receive.prom"
        #expect(await fixture.daemon.eventually {
            let text = (try? SystemCall.readFile(prom, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) }
            guard let text, let exposition = try? PrometheusExposition(parsing: text) else { return false }
            return exposition.value("txrecon_receive_requests_total", ["code": "200"]) == "1"
                && exposition.value("txrecon_receive_requests_total", ["code": "400"]) == "1"
                && exposition.value("txrecon_receive_requests_total", ["code": "404"]) == "1"
                && exposition.value("txrecon_receive_request_duration_seconds_count", [:]) == "3"
                && exposition.value("txrecon_receive_spooled_total", [:]) == "1"
        }, "txrecon-receive.prom counts the three answers")
        #expect(await fixture.daemon.eventually {
            ReceiverStatus.read(fixture.layout)?.json["requests"]?.int64Value == 3
        })
        let status = try await fixture.daemon.cli(["status"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("receiver: running (pid \(receiver.pid)), receiving on 127.0.0.1:\(fixture.port): "
                                       + "3 requests, 1 spooled, 2 refused"), "\(status.stdout)")
        let json = try JSONValue.parse(Array(try await fixture.daemon.cli(["status", "--json"]).stdout.utf8))
        #expect(json["receiver"]?["answers"]?["400"]?.int64Value == 1)
        #expect(json["receiver"]?["running"] == .bool(true))

        receiver.signal(SIGTERM)
        #expect(await receiver.wait(timeout: .seconds(20)) == 0)
        let stopped = try await fixture.daemon.cli(["status"])
        #expect(stopped.stdout.contains("receiver: not running; its last status, written "), "\(stopped.stdout)")
        let final = try PrometheusExposition(parsing: String(decoding: try SystemCall.readFile(prom, limit: 1 << 20),
                                                             as: UTF8.self))
        #expect(final.value("txrecon_receive_up", [:]) == "0")
    }

    @Test func newOverMaxInboxFilesIsAnswered503UntilItHasRoomAgain() async throws {
        // No daemon: nothing takes the files out of new/.
        let fixture = try ReceiverFixture(receive: "MaxInboxFiles=3\nMaxRequestsPerSecondPerAddress=0")
        let receiver = try await fixture.start()
        let body = try SystemCall.readFile(DaemonIntegrationTests.samples + "/04-notification-refund.json", limit: 65536)
        // new/ is counted at most a second ago: POST until the count shows the mark.
        var accepted = 0
        var refusal: HTTPReply?
        let deadline = ContinuousClock.now + .seconds(30)
        while refusal == nil, ContinuousClock.now < deadline {
            let reply = try await fixture.post("/appstore/notifications", body)
            if reply.status == 200 { accepted += 1 } else { refusal = reply }
            if refusal == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let full = try #require(refusal, "no refusal within 30 s; stderr:\n\(receiver.stderr)")
        #expect(full.status == 503 && full.header("Retry-After") == "30", "\(full.status) \(full.body)")
        #expect(full.body.contains("inbox-full"), "\(full.body)")
        #expect(accepted >= 3, "taken up to the mark")
        #expect(fixture.daemon.names("new").count == accepted, "every 200 is a file in new/")
        #expect(ReconcileGaps.read(layout: fixture.layout).map(\.source) == ["receive"],
                "a refused notification is a gap txrecon reconcile hears of")

        // The daemon would take them; the test does it, and room comes back.
        for name in fixture.daemon.names("new") { #expect(unlink(fixture.layout.new + "/" + name) == 0) }
        var recovered = false
        let again = ContinuousClock.now + .seconds(30)
        while !recovered, ContinuousClock.now < again {
            let reply = try await fixture.post("/appstore/notifications", body)
            #expect(reply.status == 200 || reply.status == 503, "\(reply.status) \(reply.body)")
            recovered = reply.status == 200
            if !recovered { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(recovered, "answered 200 again once new/ had room")
    }

    @Test(.enabled(if: getuid() == 0, "needs root: mount"))
    func aFullSpoolIsAnsweredWith503AndRecovers() async throws {
        let fixture = try ReceiverFixture()
        let root = fixture.layout.root
        try SystemCall.makeDirectory(root, mode: 0o755)
        try fixture.daemon.must("/bin/mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", root)
        defer { try? fixture.daemon.must("/bin/umount", "-l", root) }
        try await fixture.start()
        let body = try SystemCall.readFile(DaemonIntegrationTests.samples + "/04-notification-refund.json", limit: 65536)
        #expect(try await fixture.post("/appstore/notifications", body).status == 200)
        // Fill the file system with the daemon's notion of a big file.
        let filler = open(root + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let chunk = [UInt8](repeating: 0, count: 65536)
        while write(filler, chunk, chunk.count) > 0 {}
        close(filler)
        let full = try await fixture.post("/appstore/notifications", body)
        #expect(full.status == 503, "\(full.body)")
        #expect(full.header("Retry-After") != nil)
        let port = fixture.port
        let unhealthy = try await LoopbackHTTPClient.send(port: port, method: "GET", path: "/healthz")
        #expect(unhealthy.status == 503, "a full file system is not healthy")
        #expect(unhealthy.body.contains("No space left on device"), "\(unhealthy.body)")
        #expect(!unhealthy.body.contains(root), "whoever asks is not told the spool's path: \(unhealthy.body)")
        #expect(fixture.daemon.names("tmp").isEmpty, "nothing half-written is left")
        #expect(unlink(root + "/filler") == 0)
        #expect(try await LoopbackHTTPClient.send(port: port, method: "GET", path: "/healthz").status == 200)
        #expect(try await fixture.post("/appstore/notifications", body).status == 200)
        #expect(fixture.daemon.names("new").count == 2)
    }

    /// What SIGKILL or a power cut leaves in tmp/ while a body or a copy is
    /// being written: each program removes at start its own (TemporaryFile's
    /// prefixes) and nothing a producer may still be writing.
    @Test func eachProgramRemovesAtStartOnlyWhatAnEarlierRunOfItselfLeftInTmp() async throws {
        let fixture = try ReceiverFixture()
        let layout = fixture.layout
        try layout.createMissingDirectories()
        let receiverBody = TemporaryFile.received.path(in: layout, "1800000000.M1P4242Q7.host")
        let daemonCopy = TemporaryFile.copy.path(in: layout, "4243-1")
        let producers = [layout.tmp + "/1800000000.M2P4244Q1.host", layout.tmp + "/.ctl-retry-1"]
        for path in [receiverBody, daemonCopy] + producers {
            try SystemCall.writeNewFile(path, Array(#"{"signedPayload": "half"#.utf8), sync: false)
        }
        let receiver = try await fixture.start()
        let name = { (path: String) in String(path.split(separator: "/").last!) }
        #expect(Set(fixture.daemon.names("tmp")) == Set(([daemonCopy] + producers).map(name)))
        #expect(receiver.stderr.contains("removed 1 unfinished file(s) an earlier txrecon receive left"))
        let daemon = try await fixture.daemon.start()
        #expect(Set(fixture.daemon.names("tmp")) == Set(producers.map(name)),
                "a producer's files are its own to finish or remove")
        #expect(daemon.stderr.contains("removed 1 unfinished file(s) an earlier txrecon run left"))
        // The receiver still takes and the daemon still delivers.
        let reply = try await fixture.post("/appstore/notifications", sample: "05-notification-test.json")
        #expect(reply.status == 200)
        #expect(await fixture.daemon.server.waitForRequests(count: 1, timeout: .seconds(20)))
    }
}
