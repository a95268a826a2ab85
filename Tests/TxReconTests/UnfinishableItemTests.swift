// A spool move that fails for a reason that will not go away by itself
// (here: a directory where the item's file belongs) ends with the item set
// aside in rejected/ with a reason and an error entry, never in an endless
// loop of deliveries or retries.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1)))
struct UnfinishableItemTests {
    /// Puts a directory with a file in it where `spool/NAME` belongs: no
    /// rename onto it can ever succeed.
    func block(_ harness: EngineHarness, _ name: String) {
        #expect(mkdir(harness.layout.root + "/" + name, 0o700) == 0)
        _ = harness.directory.write("x", to: "spool/" + name + "/inside")
    }

    func reason(_ harness: EngineHarness, _ name: String) throws -> String {
        String(decoding: try SystemCall.readFile(harness.layout.rejected + "/" + name + ".reason", limit: 65536),
               as: UTF8.self)
    }

    @Test func anItemDeliveredFromNewThatCannotEnterDoneIsSetAsideNotDeliveredAgain() async throws {
        let harness = try EngineHarness()
        block(harness, "done/a")
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        let status = await harness.status.waitFor { $0.statistics.rejected == 1 }
        #expect(status.queued == 0)
        #expect(harness.names(in: "rejected") == ["a", "a.reason"])
        #expect(harness.names(in: "new") == [])
        let text = try reason(harness, "a")
        #expect(text.hasPrefix("unfinishable: delivered on attempt 1 (HTTP 200), but it cannot be moved into done/"))
        #expect(text.contains("txrecon requeue-rejected a"))
        let entries = harness.log.entries(withMessageID: MessageID.setAside)
        #expect(entries.count == 1)
        #expect(entries.first?.priority == .error)
        #expect(harness.clock.sleeperDeadlines.isEmpty, "nothing is scheduled for it")
        #expect(harness.transport.requests.count == 1)
    }

    @Test func aRetriedItemThatCannotEnterDoneIsSetAsideWithoutItsFailureRecord() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        #expect(harness.names(in: "queue") == ["a", "a.state"])
        block(harness, "done/a")
        harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.statistics.rejected == 1 }
        #expect(harness.names(in: "queue") == [])
        #expect(harness.names(in: "rejected") == ["a", "a.reason"])
        #expect(try reason(harness, "a").contains("delivered on attempt 2 (HTTP 200)"))
        #expect(transport.requests.count == 2)
        #expect(harness.clock.sleeperDeadlines.isEmpty)
    }

    @Test func aRefusedItemThatCannotEnterHoldIsSetAsideNotRetried() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(409, body: "duplicate")))
        block(harness, "hold/a")
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.statistics.rejected == 1 }
        #expect(harness.names(in: "rejected") == ["a", "a.reason"])
        #expect(try reason(harness, "a").contains("the backend refused it on attempt 1 (HTTP 409: duplicate)"))
        #expect(harness.transport.requests.count == 1)
        #expect(harness.clock.sleeperDeadlines.isEmpty)
    }

    @Test func aNewerSnapshotWaitingBehindTheSetAsideItemIsStillDelivered() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .hang))
        block(harness, "done/a")
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.transport.waitForRequests(1)
        await engine.offer([try harness.envelope("a", version: 2)])
        #expect(rmdir(harness.layout.done + "/a") != 0, "still in the way")
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.statistics.rejected == 1 }
        // a:2 was parked while a:1 was in flight: it goes once a:1 is set aside
        // (and is set aside too, for done/a is still a directory).
        await harness.status.waitFor { $0.statistics.rejected == 2 }
        #expect(harness.transport.requestedKeys == ["a", "a"])
        #expect(harness.names(in: "new") == [])
    }
}
