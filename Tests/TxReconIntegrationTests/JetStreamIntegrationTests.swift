// The JetStream destination end to end: the built daemon publishing into a
// real nats-server with JetStream on 127.0.0.1. Every item once per
// idempotency key across a SIGKILL; a server that goes away and comes back;
// refusals for good held; a replay not swallowed; TLS with the destination's
// CA and client certificate, and no delivery to a server no CA vouches for.
// What happens while Stream= does not capture the subjects, and to answers
// that are not its acknowledgement: JetStreamStreamCheckTests.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(3)))
struct JetStreamIntegrationTests {
    /// A daemon whose [Backend] is the NATS server, its subject `txrecon`
    /// and its Stream= ORDERS; `stream` is the stream made before it starts
    /// (capturing `txrecon.>`), if any; `jetStream` false: a core NATS
    /// server, for a test that plays JetStream's part itself.
    final class StreamFixture {
        let fixture: DaemonFixture
        let nats: NATSServerProcess

        init(backend: String = "", stream: String? = "ORDERS", jetStream: Bool = true) async throws {
            fixture = try DaemonFixture()
            nats = try await NATSServerProcess(directory: fixture.directory.path, jetStream: jetStream)
            try fixture.writeConfig("[Backend]\nProbeDelays=200ms\nStream=ORDERS\n" + backend, url: nats.url,
                                    delays: "200ms")
            if let stream { try JetStreamClient(url: nats.url).addStream(stream, subjects: ["txrecon.>"]) }
        }

        func messages(_ stream: String = "ORDERS") -> [StoredMessage] {
            (try? JetStreamClient(url: nats.url).messages(in: stream)) ?? []
        }
    }

    @Test func everyItemReachesTheStreamOncePerIdempotencyKeyAcrossASIGKILL() async throws {
        // MaxRate= keeps the drain slow enough that the kill lands in it:
        // 304 at 40 a second take over seven, so the kill after the first
        // 40 comes before the end even when the test's own task waits a
        // few seconds for a thread (the suite in parallel, under a
        // sanitizer: at 100 a second `make sanitize` once saw all done).
        let stream = try await StreamFixture(backend: "MaxRate=40\n")
        let fixture = stream.fixture
        let daemon = try await fixture.start()
        let awkward = ["a.b", "x*y", "g>h", "sp ace"]
        let ids = awkward + (1...300).map { "order-\($0)" }
        for id in ids { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually { fixture.doneItems().count >= 40 })
        daemon.signal(SIGKILL)
        _ = await daemon.wait(timeout: .seconds(10))
        let doneAtKill = fixture.doneItems().count
        #expect(doneAtKill < ids.count, "the kill interrupted the drain")

        try await fixture.start()
        let keys = Set(ids.map { ItemKey($0)!.fileName })
        // A kill between the link into done/ and the unlink from new/ leaves
        // the drop's name, which the restart moves beside it as superseded
        // (done/KEY.superseded-…): the same file, not another delivery.
        func delivered() -> Set<String> { Set(fixture.doneItems().filter { !$0.contains(".superseded-") }) }
        #expect(await fixture.eventually(timeout: .seconds(60)) { delivered() == keys },
                """
                done/ holds \(delivered().count) of \(ids.count): not there \(keys.subtracting(delivered())), \
                besides \(Set(fixture.doneItems()).subtracting(keys)); hold/ \(fixture.names("hold")), \
                rejected/ \(fixture.names("rejected")), new/ \(fixture.names("new")), queue/ \(fixture.names("queue"))
                the restarted daemon's log:
                \(fixture.daemon?.stderr.suffix(4000) ?? "")
                """)
        #expect(fixture.names("queue").isEmpty && fixture.names("new").isEmpty)
        let messages = stream.messages()
        #expect(messages.count == ids.count, "each idempotency key once: \(messages.count) for \(ids.count)")
        // The Idempotency-Key as over HTTP (`sp%20ace:1`).
        let expected = Set(ids.map { id in
            RequestBuilder.idempotencyKey(for: Item(key: ItemKey(id)!, version: ItemVersion(primary: 1), kind: .envelope))
        })
        let stored = Set(messages.compactMap(\.messageID))
        #expect(stored == expected, "\(stored.symmetricDifference(expected))")
        #expect(Set(messages.map(\.subject)) == Set(ids.map { "txrecon." + ItemKey($0)!.fileName }))
        #expect(messages.contains { $0.subject == "txrecon.a%2Eb" } && messages.contains { $0.subject == "txrecon.sp%20ace" })
        let body = try JSONValue.parse(try #require(messages.first { $0.messageID == "order-7:1" }).body)
        #expect(body["id"]?.stringValue == "order-7" && body["kind"]?.stringValue == "envelope")
        #expect(fixture.daemon?.stderr.contains("delivered on attempt 1 (stream ORDERS sequence") == true)
    }

    @Test func aServerThatGoesAwayIsProbedAndEverythingGoesOnceItIsBack() async throws {
        let stream = try await StreamFixture()
        let fixture = stream.fixture
        try await fixture.start()
        try fixture.drop(fixture.envelope("before", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["before"] })

        stream.nats.stop()
        for id in (1...10).map({ "during-\($0)" }) { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually { fixture.names("queue").filter { !$0.hasSuffix(".state") }.count == 10 })
        #expect(await fixture.notify.waitFor({ $0.value(of: "STATUS")?.contains("failing since") == true },
                                              timeout: .seconds(20)) != nil)
        // libnats' own word on the connection, in the journal.
        #expect(await fixture.eventually {
            fixture.daemon?.stderr.contains("the connection to the NATS server \(stream.nats.url) was lost") == true
        })
        try await stream.nats.start()
        #expect(await fixture.eventually(timeout: .seconds(30)) { fixture.doneItems().count == 11 })
        #expect(await fixture.eventually {
            fixture.daemon?.stderr.contains("reconnected to the NATS server \(stream.nats.url)") == true
        })
        #expect(fixture.names("hold").isEmpty)
        #expect(Set(stream.messages().compactMap(\.messageID)).count == 11 && stream.messages().count == 11)
    }

    @Test func aConnectionAReloadReplacesIsNotReportedLost() async throws {
        let stream = try await StreamFixture()
        let fixture = stream.fixture
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("first", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["first"] })
        // Another Timeout= makes another connection; the first is closed.
        try fixture.writeConfig("[Backend]\nProbeDelays=200ms\nStream=ORDERS\nTimeout=3s\n", url: stream.nats.url,
                                delays: "200ms")
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually { daemon.stderr.contains("configuration reloaded") })
        try fixture.drop(fixture.envelope("second", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["first", "second"] })
        // libnats reports on one thread in order: a report of the first
        // connection's close would come before the second's loss.
        stream.nats.stop()
        #expect(await fixture.eventually { daemon.stderr.contains("was lost") })
        let lost = daemon.stderr.components(separatedBy: "the connection to the NATS server").count - 1
        #expect(lost == 1, "\(daemon.stderr.suffix(800))")
    }

    @Test func aStreamThatRefusesForGoodHoldsTheItemWithTheReason() async throws {
        // ORDERS takes messages of 64 bytes at most; the envelope is larger.
        let stream = try await StreamFixture(stream: nil)
        try JetStreamClient(url: stream.nats.url).addStream("ORDERS", subjects: ["txrecon.>"], maximumMessageSize: 64)
        let fixture = stream.fixture
        try await fixture.start()
        try fixture.drop(fixture.envelope("oversized", version: 1))
        #expect(await fixture.eventually { fixture.names("hold").contains("oversized") })
        let reason = String(decoding: try SystemCall.readFile(fixture.layout.hold + "/oversized.reason", limit: 1 << 16),
                            as: UTF8.self)
        #expect(reason.contains("JetStream error 10054"), "\(reason)")
        #expect(stream.messages().isEmpty)
    }

    /// A server that speaks TLS only, with a certificate for 127.0.0.1, and
    /// requires a client certificate; both self-signed for the test.
    final class TLSStream {
        let fixture: DaemonFixture
        let nats: NATSServerProcess
        let files: (ca: String, certificate: String, key: String)

        /// `serverName`: the subjectAltName of the server's certificate.
        init(serverName: String = "IP:127.0.0.1") async throws {
            fixture = try DaemonFixture()
            let path = fixture.directory.path
            try await HTTPSTestBackend.makeCertificate(commonName: "nats", subjectAltName: serverName,
                                                 certificate: path + "/nats.pem", key: path + "/nats.key")
            try await HTTPSTestBackend.makeCertificate(commonName: "txrecon-test-client", certificate: path + "/client.pem",
                                                 key: path + "/client.key")
            files = (path + "/nats.pem", path + "/client.pem", path + "/client.key")
            nats = try await NATSServerProcess(directory: path, tls: .init(certificate: path + "/nats.pem",
                                                                          key: path + "/nats.key",
                                                                          clientCA: path + "/client.pem"))
            if serverName == "IP:127.0.0.1" {
                try JetStreamClient(url: nats.url, tls: files).addStream("ORDERS", subjects: ["txrecon.>"])
            }
        }

        func configure(ca: Bool) throws {
            try fixture.writeConfig("""
                [Backend]
                ProbeDelays=200ms
                Stream=ORDERS
                \(ca ? "CAFile=\(files.ca)" : "")
                ClientCertificateFile=\(files.certificate)
                ClientKeyFile=\(files.key)
                """, url: nats.url, delays: "200ms")
        }

        func messages() -> [StoredMessage] {
            (try? JetStreamClient(url: nats.url, tls: files).messages(in: "ORDERS")) ?? []
        }
    }

    @Test func overTLSWithItsCAAndAClientCertificateEveryItemReachesTheStream() async throws {
        let stream = try await TLSStream()
        let fixture = stream.fixture
        #expect(stream.nats.url.hasPrefix("tls://"))
        try stream.configure(ca: true)
        let daemon = try await fixture.start()
        for id in ["t-1", "t-2", "t-3"] { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually { fixture.doneItems() == ["t-1", "t-2", "t-3"] })
        #expect(Set(stream.messages().compactMap(\.messageID)) == ["t-1:1", "t-2:1", "t-3:1"])
        // Its own close at a stop is no lost connection.
        daemon.signal(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(20)) == 0)
        #expect(daemon.stderr.contains("stopped") && !daemon.stderr.contains("was lost"), "\(daemon.stderr.suffix(400))")
    }

    /// Starts the daemon on `stream`, drops one item and expects it to stay
    /// queued, undelivered, with `refusal` in the log.
    func expectNothingSent(to stream: TLSStream, ca: Bool, refusal: String) async throws {
        let fixture = stream.fixture
        try stream.configure(ca: ca)
        try await fixture.start()
        try fixture.drop(fixture.envelope("refused", version: 1))
        #expect(await fixture.eventually { fixture.names("queue").contains("refused.state") })
        #expect(await fixture.eventually { fixture.daemon?.stderr.contains(refusal) == true },
                "\(fixture.daemon?.stderr.suffix(600) ?? "")")
        #expect(fixture.doneItems().isEmpty)
    }

    @Test func aServerWhoseCertificateNoCAVouchesForGetsNothing() async throws {
        // No CAFile=: the system's CAs do not know the self-signed server.
        let stream = try await TLSStream()
        try await expectNothingSent(to: stream, ca: false, refusal: "self-signed certificate")
        #expect(stream.messages().isEmpty)
    }

    @Test func aServerWithATrustedCertificateForAnotherNameGetsNothing() async throws {
        // CAFile= vouches for the certificate, but it names nats.example,
        // not the 127.0.0.1 of URL=.
        try await expectNothingSent(to: try await TLSStream(serverName: "DNS:nats.example"), ca: true,
                                    refusal: "IP address mismatch")
    }

    @Test(.enabled(if: getuid() == 0, "a replay is root's to ask for"))
    func aReplayIntoTheStreamIsNotSwallowedByItsDuplicateWindow() async throws {
        let stream = try await StreamFixture()
        let fixture = stream.fixture
        try await fixture.start()
        try fixture.drop(fixture.envelope("again", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["again"] })
        let replayed = try await fixture.cli(["replay", "again"])
        #expect(replayed.status == 0, "\(replayed)")
        #expect(await fixture.eventually { stream.messages().count == 2 })
        let ids = stream.messages().compactMap(\.messageID)
        #expect(ids.first == "again:1" && ids.last?.hasPrefix("again:1:replay-") == true, "\(ids)")
    }
}
