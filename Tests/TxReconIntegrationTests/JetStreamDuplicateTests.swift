// A duplicate acknowledgement finishes an item only when the message the
// stream kept under that Nats-Msg-Id is this destination's, end to end
// against a real nats-server. Two destinations that reach one server by
// two names the loader cannot equate (127.0.0.1 and localhost) publish into
// one stream under two subjects: the one told "duplicate" for the other's
// message finishes nothing until its own is stored (once the window has
// passed), and the log says why. A retry of our own earlier publish still
// finishes at once; one whose message the stream no longer holds too, with
// the risk logged. Without the permission to look a message up:
// JetStreamPermissionsTests.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(3)))
struct JetStreamDuplicateTests {
    typealias StreamFixture = JetStreamIntegrationTests.StreamFixture

    @Test func aDestinationToldDuplicateForAnotherSubjectsMessageFinishesOnlyOnceItsOwnIsStored() async throws {
        let stream = try await StreamFixture(stream: nil)
        let fixture = stream.fixture
        // A short window, so that the retry after it is seen stored.
        try JetStreamClient(url: stream.nats.url).addStream("ORDERS", subjects: ["txrecon.>", "analytics.>"],
                                                           duplicateWindow: .seconds(2))
        // [Backend] is nats://127.0.0.1:PORT; this one the same server by name.
        _ = fixture.directory.write("""
            [Backend]
            URL=nats://localhost:\(stream.nats.port)
            Subject=analytics
            Stream=ORDERS
            Timeout=2s
            ProbeDelays=200ms

            [Delivery]
            RetryDelays=200ms
            """, to: "destinations/analytics.conf")
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("shared", version: 1))

        let analytics = fixture.layout.destination("analytics")
        func finished() -> [String: Bool] {
            let done = ["txrecon": fixture.doneItems(), "analytics": (try? SystemCall.listDirectory(analytics.done)) ?? []]
            return done.mapValues { $0.contains("shared") }
        }
        // Whenever a destination has finished the item, its own subject
        // holds it: done/ read first, the stream after (it only grows).
        var finishedWithoutMessage: [String] = []
        func settled() -> Bool {
            let now = finished()
            let subjects = Set(stream.messages().map(\.subject))
            finishedWithoutMessage += now.filter { $0.value && !subjects.contains($0.key + ".shared") }.map(\.key)
            return now.values.allSatisfy { $0 }
        }
        #expect(await fixture.eventually(timeout: .seconds(30)) { settled() }, "\(daemon.stderr.suffix(2000))")
        #expect(finishedWithoutMessage.isEmpty, "finished with nothing on its subject: \(Set(finishedWithoutMessage))")
        let messages = stream.messages()
        #expect(messages.map(\.subject).sorted() == ["analytics.shared", "txrecon.shared"], "\(messages.map(\.subject))")
        #expect(messages.allSatisfy { $0.messageID == "shared:1" })
        // The one told "duplicate" first said why, once for its connection.
        let warning = "as a duplicate of sequence 1, which holds "
        #expect(daemon.stderr.contains(warning) && daemon.stderr.contains("(Nats-Msg-Id shared:1): another destination"),
                "\(daemon.stderr.suffix(2000))")
        #expect(daemon.stderr.components(separatedBy: "(logged once per connection)").count - 1 == 1,
                "\(daemon.stderr.suffix(2000))")
    }

    @Test func aRetryOfOurOwnEarlierPublishFinishesAtOnce() async throws {
        let stream = try await StreamFixture()
        let fixture = stream.fixture
        // What attempts whose acknowledgements were lost left in the stream;
        // the first a work-queue consumer has taken since (the first, so
        // that the stream reads back without a gap).
        let client = try JetStreamClient(url: stream.nats.url)
        for id in ["taken", "again"] {
            let stored = try client.publishIntoStream(fixture.envelope(id, version: 1), to: "txrecon." + id,
                                                      messageID: id + ":1")
            #expect(stored.duplicate == false)
        }
        try client.deleteMessage(1, from: "ORDERS")
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("again", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["again"] }, "\(daemon.stderr.suffix(2000))")
        // Awaited: the file is in done/ just before the engine logs its delivery.
        #expect(await fixture.eventually {
            daemon.stderr.contains("delivered on attempt 1 (stream ORDERS sequence 2 (a duplicate))")
        }, "\(daemon.stderr.suffix(2000))")
        #expect(stream.messages().map(\.messageID) == ["again:1"])

        // Its message gone, it cannot be told whose it was: finished as
        // the stream acknowledged it, and the risk logged once.
        try fixture.drop(fixture.envelope("taken", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["again", "taken"] }, "\(daemon.stderr.suffix(2000))")
        #expect(await fixture.eventually {
            daemon.stderr.contains("delivered on attempt 1 (stream ORDERS sequence 1 (a duplicate))")
        }, "\(daemon.stderr.suffix(2000))")
        #expect(daemon.stderr.contains("as a duplicate of sequence 1, which the stream no longer holds"),
                "\(daemon.stderr.suffix(2000))")
        #expect(!daemon.stderr.contains("which holds "), "nothing taken for another subject's")
    }
}
