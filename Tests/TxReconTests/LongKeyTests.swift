// Every key the input formats accept can be queued, retried, held,
// superseded and finished: each name the spool derives from it fits in
// NAME_MAX, however many of its bytes need escaping.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1)))
struct LongKeyTests {
    /// Keys at the edges: the longest plain key, keys whose `%XX` form
    /// overflows NAME_MAX, one whose `%XX` form is exactly the longest kept.
    static let edgeKeys: [String] = [
        String(repeating: "7", count: ItemKey.maximumLength),
        String(repeating: ".", count: 100),
        String(repeating: ".", count: ItemKey.maximumLength),
        String(repeating: ".", count: 84),
        String(repeating: "з", count: 46),
        String(repeating: "з", count: 64),
        String(repeating: "a", count: 100) + String(repeating: ".", count: 28),
        String(repeating: "a", count: 99) + String(repeating: ".", count: 27) + "é",
    ]

    /// The longest version text: negative envelope versions, revoked, with
    /// a notification date.
    static let longestVersion = ItemVersion(primary: Int64.min, revoked: true, secondary: Int64.max)

    @Test(arguments: edgeKeys)
    func everyNameDerivedFromAKeyFitsInNameMax(raw: String) throws {
        let key = try #require(ItemKey(raw))
        let name = key.fileName
        #expect(name.utf8.count <= ItemKey.maximumFileNameLength)
        #expect(!name.contains("."))
        #expect(!name.contains("/"))
        #expect(ItemKey(fileName: name) == key)
        let counter = String(Int.max)
        for derived in [name + ".state", name + ".reason", ".tmp-" + name + ".reason",
                        name + ".superseded-\(LongKeyTests.longestVersion)." + counter] {
            #expect(derived.utf8.count <= Int(NAME_MAX), "\(derived.utf8.count) bytes: \(derived)")
        }
    }

    @Test func aKeyKeepsItsReadableNameWhileThatFitsAndOnlyThenIsBase64() throws {
        // 172 bytes once escaped: 100 plain bytes and 24 dots of three.
        let fits = try #require(ItemKey(String(repeating: "a", count: 100) + String(repeating: ".", count: 24)))
        #expect(fits.fileName == String(repeating: "a", count: 100) + String(repeating: "%2E", count: 24))
        #expect(fits.fileName.utf8.count == ItemKey.maximumFileNameLength)
        let over = try #require(ItemKey(String(repeating: "a", count: 100) + String(repeating: ".", count: 25)))
        #expect(over.fileName.hasPrefix("="))
        #expect(over.fileName == "=" + Base64URL.encode(over.rawValue.utf8))
        #expect(ItemKey(fileName: over.fileName) == over)
    }

    @Test func canonicallyEquivalentKeysAreTwoKeysEachWithItsSnapshot() throws {
        // é as one scalar and as e with a combining accent: equal Strings,
        // different bytes, names and idempotency keys.
        let composed = try #require(ItemKey("caf\u{E9}"))
        let decomposed = try #require(ItemKey("cafe\u{301}"))
        #expect(composed != decomposed && composed.fileName != decomposed.fileName)
        #expect(Set([composed, decomposed]).count == 2)
        #expect((composed < decomposed) != (decomposed < composed), "ordered, and consistently with ==")

        var pending = PendingItems()
        for (key, name) in [(composed, "n1"), (decomposed, "n2")] {
            let drop = try PendingItemsTests.drop(key.rawValue, version: 1, name: name)
            #expect(drop.item.key.rawValue.utf8.elementsEqual(key.rawValue.utf8))
            let placement = try pending.place(drop, freshKeyWaitsInInbox: false) { _ in nil }
            #expect(placement.moves == [.accept(drop: name, key: key)], "\(name) is its own key's first snapshot")
            pending.apply(placement.change, now: .zero)
        }
        #expect(pending.count == 2)
    }

    @Test func onlyTheOneNameAKeyIsGivenDecodesToIt() {
        // Another spelling of a key would let two files stand for one item.
        #expect(ItemKey(fileName: "%41") == nil, "A is plain, never escaped")
        #expect(ItemKey(fileName: "=" + Base64URL.encode("a.b".utf8)) == nil, "a%2Eb fits: never base64")
        #expect(ItemKey(fileName: "=") == nil)
        #expect(ItemKey(fileName: "=!!") == nil)
        #expect(ItemKey(fileName: "=" + Base64URL.encode([0xFF, 0xFE] + Array(repeating: 0x2E, count: 80))) == nil,
                "not UTF-8")
    }

    @Test(arguments: edgeKeys)
    func theSpoolQueuesRetriesHoldsSupersedesAndFinishesEveryKey(raw: String) throws {
        let harness = try EngineHarness()
        let spool = harness.spool
        let key = try #require(ItemKey(raw))
        let layout = harness.layout
        func drop() throws -> String {
            let name = "drop-\(UInt32.random(in: 0...UInt32.max))"
            try SystemCall.writeNewFile(layout.new + "/" + name, Array("{}".utf8), sync: false)
            return name
        }
        try spool.accept(drop: try drop(), as: key)
        try spool.writeState(DeliveryState(attempts: 1), for: key)
        #expect(harness.exists("queue/" + key.fileName + ".state"))
        try spool.hold(key, reason: "HTTP 409", at: 0, attempts: 1)
        #expect(spool.holdReason(key) == "HTTP 409")
        #expect(try spool.release(key))
        try spool.supersede(.queue, key: key, version: LongKeyTests.longestVersion)
        try spool.supersede(drop: try drop(), key: key, version: LongKeyTests.longestVersion)
        try spool.accept(drop: try drop(), as: key)
        try spool.finish(key, followsDelivery: false)
        #expect(harness.names(in: "done").filter { $0.hasPrefix(key.fileName + ".superseded-") }.count == 2)
        #expect(harness.exists("done/" + key.fileName))
        try spool.accept(drop: try drop(), as: key)
        _ = try spool.setAside(key, because: Rejection("unfinishable", "test"), at: 0)
        #expect(harness.names(in: "queue") == [])
    }

    @Test func anIdOfAHundredDotsIsDeliveredOnceAndFinished() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        let id = String(repeating: ".", count: 100)
        await engine.offer([try harness.envelope(id, version: 1)])
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "done") == [ItemKey(id)!.fileName])
        #expect(harness.names(in: "new") == [])
        #expect(harness.names(in: "queue") == [])
        #expect(harness.log.entries.filter { $0.priority <= .error }.isEmpty)
        #expect(harness.transport.requests.count == 1)
    }

    @Test func aRefusalOfALongCyrillicOrderIdIsHeld() async throws {
        let id = "заказ-" + String(repeating: "ж", count: 40)
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(409, body: "duplicate order")))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope(id, version: 1)])
        await harness.status.waitFor { $0.held == 1 }
        let key = try #require(ItemKey(id))
        #expect(harness.names(in: "hold") == [key.fileName, key.fileName + ".reason"])
        #expect(harness.transport.requests.count == 1)
        #expect(harness.clock.sleeperDeadlines.isEmpty, "held, not retried")
    }

    @Test func theBackoffOfAnIdOfEightyFourDotsSurvivesARestart() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let id = String(repeating: ".", count: 84)
        let key = try #require(ItemKey(id))
        let first = harness.makeEngine()
        try await first.start()
        await first.offer([try harness.envelope(id, version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        await first.stop()
        #expect(harness.names(in: "queue") == [key.fileName, key.fileName + ".state"])

        let second = harness.makeEngine()
        try await second.start()
        await harness.clock.waitForSleepers { $0.count == 1 }
        #expect(harness.clock.sleeperDeadlines.first == harness.clock.now + .seconds(2),
                "the restored item waits out its recorded delay")
        #expect(transport.requests.count == 1)
        transport.setDefault(.status(204))
        harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(try JSONValue.parse(transport.requests[1].body)["attempt"]?.int64Value == 2)
    }
}
