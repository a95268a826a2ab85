// Only the acknowledgement of the stream Stream= names finishes an item (issue
// 40, rule 2), end to end against a real nats-server: while the stream does
// not exist, or exists but does not capture the subjects, nothing is
// published (a core subscriber answering every message on them with a fake
// acknowledgement hears nothing), the items stay queued, the reason is
// logged once and shown in the status, and everything goes once the
// operator puts the stream right; the check is made again after a
// reconnect; and an answer that is not Stream='s acknowledgement finishes
// nothing, with JetStream's part played by the test so that no real stream
// answers first.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(3)))
struct JetStreamStreamCheckTests {
    typealias StreamFixture = JetStreamIntegrationTests.StreamFixture

    /// What an impostor answers: a reply shaped like ORDERS' acknowledgement.
    static let fakeAcknowledgement = #"{"stream":"ORDERS","seq":1}"#

    @Test func nothingIsSentWhileTheStreamDoesNotExistAndEverythingGoesOnceItDoes() async throws {
        let stream = try await StreamFixture(stream: nil)
        let fixture = stream.fixture
        // A core subscriber on every subject txrecon publishes to, answering
        // each message as ORDERS would: the five finished items of the issue.
        let impostor = try JetStreamClient(url: stream.nats.url)
        let heard = try impostor.answer(on: "txrecon.>", with: Self.fakeAcknowledgement)
        let daemon = try await fixture.start()
        let ids = (1...5).map { "early-\($0)" }
        for id in ids { try fixture.drop(fixture.envelope(id, version: 1)) }

        // The destination fails with the reason, in the status too.
        #expect(await fixture.notify.waitFor({ $0.value(of: "STATUS")?.contains("stream ORDERS does not exist") == true },
                                              timeout: .seconds(30)) != nil,
                "\(daemon.stderr.suffix(1500))")
        #expect(await fixture.eventually { Set(ids).isSubset(of: fixture.names("queue")) })
        #expect(fixture.doneItems().isEmpty, "nothing stores them, so nothing is finished")
        #expect(heard.answered.load(ordering: .relaxed) == 0, "nothing was published while there is no stream")
        // Logged once as a warning, not per attempt or probe.
        let warning = "JetStream stream check on the NATS server \(stream.nats.url): stream ORDERS does not exist"
        #expect(daemon.stderr.components(separatedBy: warning).count - 1 == 1, "\(daemon.stderr.suffix(1500))")

        try JetStreamClient(url: stream.nats.url).addStream("ORDERS", subjects: ["txrecon.>"])
        #expect(await fixture.eventually(timeout: .seconds(30)) { fixture.doneItems() == ids.sorted() },
                "\(daemon.stderr.suffix(1500))")
        // The impostor's answer can reach the daemon before the stream has
        // stored the message, so the stream may still be taking them in.
        #expect(await fixture.eventually {
            Set(stream.messages().compactMap(\.messageID)) == Set(ids.map { "\($0):1" })
        })
        #expect(daemon.stderr.contains("stream ORDERS captures txrecon.KEY (as txrecon.>); publishing"))
        #expect(fixture.names("hold").isEmpty)
        withExtendedLifetime(impostor) {}
    }

    @Test func aStreamThatCapturesOtherSubjectsGetsNothingUntilItCapturesThem() async throws {
        let stream = try await StreamFixture(stream: nil)
        let fixture = stream.fixture
        let client = try JetStreamClient(url: stream.nats.url)
        try client.addStream("ORDERS", subjects: ["orders.>"])
        let daemon = try await fixture.start()
        // Three items: the destination counts as failing once three
        // different items failed in a row, as for any backend.
        let ids = ["elsewhere-1", "elsewhere-2", "elsewhere-3"]
        for id in ids { try fixture.drop(fixture.envelope(id, version: 1)) }

        let problem = "stream ORDERS captures orders.> but txrecon publishes to txrecon.KEY"
        #expect(await fixture.eventually { daemon.stderr.contains(problem) }, "\(daemon.stderr.suffix(1500))")
        #expect(await fixture.notify.waitFor({ $0.value(of: "STATUS")?.contains("stream ORDERS captures orders.>") == true },
                                              timeout: .seconds(30)) != nil)
        #expect(await fixture.eventually { Set(ids).isSubset(of: fixture.names("queue")) })
        #expect(fixture.doneItems().isEmpty && stream.messages().isEmpty)

        try client.addStream("ORDERS", subjects: ["orders.>", "txrecon.*"], update: true)
        #expect(await fixture.eventually(timeout: .seconds(30)) { fixture.doneItems() == ids })
        #expect(Set(stream.messages().compactMap(\.messageID)) == Set(ids.map { "\($0):1" }))
    }

    @Test func afterAReconnectTheStreamIsCheckedAgainBeforeAnythingIsPublished() async throws {
        let stream = try await StreamFixture()
        let fixture = stream.fixture
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("before", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["before"] })

        // The server comes back without the stream, and with an impostor.
        stream.nats.stop()
        try await stream.nats.start(withEmptyStore: true)
        let impostor = try JetStreamClient(url: stream.nats.url)
        let heard = try impostor.answer(on: "txrecon.>", with: Self.fakeAcknowledgement)
        #expect(await fixture.eventually(timeout: .seconds(30)) {
            daemon.stderr.contains("reconnected to the NATS server \(stream.nats.url)")
        })
        try fixture.drop(fixture.envelope("after", version: 1))

        #expect(await fixture.eventually { daemon.stderr.contains("stream ORDERS does not exist") },
                "\(daemon.stderr.suffix(1500))")
        #expect(await fixture.eventually { fixture.names("queue").contains("after") })
        #expect(fixture.doneItems() == ["before"])
        #expect(heard.answered.load(ordering: .relaxed) == 0)

        try JetStreamClient(url: stream.nats.url).addStream("ORDERS", subjects: ["txrecon.>"])
        #expect(await fixture.eventually(timeout: .seconds(30)) { fixture.doneItems() == ["after", "before"] })
        #expect(stream.messages().map(\.messageID) == ["after:1"])
        withExtendedLifetime(impostor) {}
    }

    /// STREAM.INFO's answer for ORDERS capturing `txrecon.>`, as a
    /// JetStream server gives it.
    static let streamInfo = """
        {"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"ORDERS","subjects":["txrecon.>"],\
        "retention":"limits","max_consumers":-1,"max_msgs":-1,"max_bytes":-1,"max_age":0,"max_msg_size":-1,\
        "storage":"file","discard":"old","num_replicas":1,"duplicate_window":120000000000},\
        "created":"2026-01-01T00:00:00Z","state":{"messages":0,"bytes":0,"first_seq":0,\
        "first_ts":"0001-01-01T00:00:00Z","last_seq":0,"last_ts":"0001-01-01T00:00:00Z","consumer_count":0}}
        """

    @Test(arguments: [
        (#"{"stream":"OTHER","seq":7}"#, #"names stream "OTHER", not ORDERS (Stream=)"#),
        (#"{"stream":"ORDERS","seq":0}"#, "is not a JetStream acknowledgement"),
        ("{}", "is not a JetStream acknowledgement"),
    ])
    func anAnswerThatIsNotTheStreamsAcknowledgementFinishesNothing(answer: String, refusal: String) async throws {
        // A core NATS server: the test answers STREAM.INFO as if ORDERS
        // captured the subjects, so the check passes and the item is
        // published, and only the impostor answers it.
        let stream = try await StreamFixture(stream: nil, jetStream: false)
        let fixture = stream.fixture
        let impostor = try JetStreamClient(url: stream.nats.url)
        try impostor.answer(on: "$JS.API.STREAM.INFO.ORDERS", with: Self.streamInfo)
        let heard = try impostor.answer(on: "txrecon.>", with: answer)
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("answered", version: 1))

        #expect(await fixture.eventually { daemon.stderr.contains(refusal) }, "\(daemon.stderr.suffix(1500))")
        #expect(heard.answered.load(ordering: .relaxed) >= 1, "the check passed and the item was published")
        #expect(await fixture.eventually { fixture.names("queue").contains("answered.state") })
        #expect(fixture.doneItems().isEmpty && fixture.names("hold").isEmpty)
        // Warned about once per connection; every attempt is refused.
        #expect(await fixture.eventually { heard.answered.load(ordering: .relaxed) >= 3 })
        #expect(daemon.stderr.components(separatedBy: "(logged once per connection)").count - 1 == 1,
                "\(daemon.stderr.suffix(1500))")
        #expect(fixture.doneItems().isEmpty)
    }
}
