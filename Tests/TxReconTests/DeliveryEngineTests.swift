// The delivery engine against a manual clock and a scripted transport: no
// test here sleeps; time moves only when a test advances the clock.
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1)))
struct DeliveryEngineTests {
    // MARK: Delivery and the response table

    @Test func aConfirmedDeliveryMovesTheItemToDone() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "queue") == [])
        #expect(harness.names(in: "done") == ["a"])
        #expect(harness.names(in: "new") == [])
        #expect(harness.transport.requests.first?.header("Idempotency-Key") == "a:1")
    }

    @Test(arguments: [200, 201, 204, 299])
    func everySuccessOtherThan202FinishesTheItem(status: Int) async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(status)))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "done") == ["a"])
    }

    @Test(arguments: [
        ScriptedTransport.Reply.status(202), .status(401), .status(403), .status(408), .status(425), .status(429),
        .status(500), .status(503), .failure(TransportFailure(.connect, "refused")),
        .failure(TransportFailure(.timeout, "10s")), .failure(TransportFailure(.tls, "untrusted")),
        .failure(TransportFailure(.protocolError, "garbage")),
    ])
    func retryableAnswersKeepTheItemQueuedWithItsState(reply: ScriptedTransport.Reply) async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: reply))
        let engine = try await harness.startedEngine()
        let start = harness.clock.now
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: start + .seconds(2))
        #expect(harness.names(in: "queue") == ["a", "a.state"])
        #expect(harness.names(in: "new") == [])
        #expect(harness.names(in: "done") == [])
        #expect(harness.names(in: "hold") == [])
        let state = try #require(DeliveryState(json: try SystemCall.readFile(harness.layout.queue + "/a.state", limit: 4096)))
        #expect(state.attempts == 1)
        #expect(state.nextAttemptAt == harness.clock.wallMilliseconds + 2000)
    }

    @Test(arguments: [400, 404, 409, 410, 422, 451])
    func refusalsMoveTheItemToHoldWithStatusAndBody(status: Int) async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(status, body: "unknown product\n")))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.held == 1 }
        #expect(harness.names(in: "hold") == ["a", "a.reason"])
        #expect(harness.names(in: "queue") == [])
        #expect(harness.names(in: "new") == [])
        #expect(harness.spool.holdReason(ItemKey("a")!) == "HTTP \(status): unknown product\\n")
        #expect(harness.clock.sleeperDeadlines.isEmpty, "a held item is never retried automatically")
    }

    // MARK: A fresh key's first attempt, straight from new/

    @Test func aFreshKeysFirstAttemptSendsFromNewAndOneMoveFinishesIt() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let drop = try harness.envelope("a", version: 1)
        await engine.offer([drop])
        await harness.transport.waitForRequests(1)
        #expect(harness.names(in: "new") == [drop.name])
        #expect(harness.names(in: "queue") == [], "never moved into queue/")
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "new") == [])
        #expect(harness.names(in: "done") == ["a"])
    }

    @Test func aNewerSnapshotReplacesAFreshKeyStillWaitingInNew() async throws {
        // One worker, two attempts outstanding: x and y hang, so a waits.
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(maxConcurrentDeliveries: 1),
                                        transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let x = try harness.envelope("x", version: 1), y = try harness.envelope("y", version: 1)
        await engine.offer([x, y])
        await harness.transport.waitForRequests(1)
        let older = try harness.envelope("a", version: 1), newer = try harness.envelope("a", version: 2)
        await engine.offer([older])
        await engine.offer([newer])
        #expect(harness.names(in: "new").sorted() == [newer.name, x.name, y.name].sorted())
        #expect(harness.names(in: "done").contains { $0.hasPrefix("a.superseded-1") })
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 3 }
        let keys = harness.transport.requests.compactMap { $0.header("Idempotency-Key") }.filter { $0.hasPrefix("a:") }
        #expect(keys == ["a:2"], "the older snapshot is never sent")
        #expect(harness.names(in: "new") == [])
    }

    @Test func aDropReadAgainAfterItsFileLeftNewIsNeitherAnErrorNorSentTwice() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        let drop = try harness.envelope("a", version: 1)
        await engine.offer([drop])
        await harness.status.waitFor { $0.delivered == 1 }
        let failures = await engine.offer([drop]).refused
        #expect(failures.isEmpty)
        #expect(harness.transport.requests.count == 1)
        #expect(harness.names(in: "done") == ["a"])
    }

    // MARK: Intake's hand-over (IntakeHandOff): credit, waits, their end

    /// Intake's side of a hand-over, which blocks: on a thread of its own.
    func handOver(_ drops: [Drop], to sender: IntakeHandOff, waitsForWindow: Bool = true,
                  whenWaiting: @escaping @Sendable () -> Void = {}) -> Task<DeliveryEngine.Offered, Never> {
        Task { await BlockingWork.run { sender.offer(drops, waitsForWindow: waitsForWindow, whenWaiting: whenWaiting) } }
    }

    @Test func freshKeysBeyondTheWindowGoToQueueAfterIntakeWaitedBriefly() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 2, inboxWindowWait: .seconds(1))
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        let start = harness.clock.now
        let returned = Mutex(false)
        let drops = try (1...3).map { try harness.envelope("k\($0)", version: 1) }
        let offer = Task {
            _ = await handOver(drops, to: sender).value
            returned.withLock { $0 = true }
        }
        await harness.clock.waitForSleeper(until: start + .seconds(1))
        #expect(harness.names(in: "queue") == ["k3"], "the window holds two; the third went to queue/")
        #expect(!returned.withLock { $0 }, "intake waits for room while the window is full")
        harness.clock.advance(by: .seconds(1))
        await offer.value
        #expect(returned.withLock { $0 })
        #expect(harness.names(in: "new").count == 2)
    }

    @Test func anItemOfferedAfterAReceiptsHistoryIsSentBeforeTheRestOfIt() async throws {
        // One worker: what is sent next is what the engine chose next. The
        // engine hands over two attempts at a time (twice its deliveries),
        // which hang until the news is in.
        let transport = ScriptedTransport(default: .hang, workers: 1)
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(maxConcurrentDeliveries: 1),
                                        transport: transport)
        let engine = try await harness.startedEngine()
        var history = try (1...20).map { try harness.envelope("h\($0)", version: 1) }
        for index in history.indices { history[index].bulk = true }
        await engine.offer(history)
        await transport.waitForRequests(1)
        await engine.offer([try harness.envelope("news", version: 1)])
        transport.setDefault(.status(204))
        transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 21 }
        let order = transport.requestedKeys
        #expect(Set(order.prefix(2)).isSubset(of: ["h1", "h2", "news"]), "\(order)")
        #expect((order.firstIndex(of: "news") ?? 99) <= 2,
                "sent with the two handed over before it, not after the eighteen left of the history: \(order)")
        #expect(Set(order).count == 21)
    }

    @Test func aBulkBatchIsPlacedWithoutWaitingForRoomInTheWindow() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 2, inboxWindowWait: .seconds(1))
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        var history = try (1...3).map { try harness.envelope("k\($0)", version: 1) }
        for index in history.indices { history[index].bulk = true }
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        let offer = handOver(history, to: sender, waitsForWindow: false)
        #expect(await harness.endsWithoutTheClock(Task { _ = await offer.value }, unstick: .seconds(1)),
                "intake is not held up waiting for room")
        #expect(await BlockingWork.run { sender.settle() }.isEmpty, "the engine took the batch")
        #expect(harness.names(in: "queue") == ["k3"], "the window holds two; the third went to queue/ at once")
        harness.transport.releaseHeld(with: .status(204))
    }

    @Test func anItemDeliveredStraightFromNewIsOneEntryNamingItsFile() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        let drop = try harness.envelope("a", version: 1)
        await engine.offer([drop])
        await harness.status.waitFor { $0.delivered == 1 }
        let entries = harness.log.entries.filter { $0.fields.contains { $0.name == "TXRECON_ID" && $0.value == "a" } }
        #expect(entries.map(\.messageID) == [MessageID.delivered], "never in queue/, so never accepted")
        #expect(entries.first?.fields.contains { $0.name == "TXRECON_FILE" && $0.value == drop.name } == true)
        #expect(entries.first?.message.hasSuffix("from new/" + drop.name) == true)
    }

    @Test func anItemWhoseFirstAttemptFailsIsAcceptedIntoQueueWhenThatAttemptEnds() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.hang])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        let drop = try harness.envelope("a", version: 1)
        await engine.offer([drop])
        await transport.waitForRequests(1)
        #expect(harness.log.entries(withMessageID: MessageID.accepted).isEmpty, "attempted from new/: not accepted yet")
        transport.releaseHeld(with: .status(503))
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        #expect(harness.names(in: "queue").contains("a"))
        let events = harness.log.entries.compactMap(\.messageID).filter { $0 != MessageID.backendFailing }
        #expect(events == [MessageID.accepted, MessageID.deferred])
        #expect(harness.log.entries(withMessageID: MessageID.accepted).first?.fields
                    .contains { $0.name == "TXRECON_FILE" && $0.value == drop.name } == true)
        harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.delivered == 1 }
        let delivered = harness.log.entries(withMessageID: MessageID.delivered)
        #expect(delivered.count == 1)
        #expect(delivered.first?.fields.contains { $0.name == "TXRECON_FILE" } == false, "delivered out of queue/")
    }

    @Test func anOfferSaysWhenItMustWaitForRoomAndNotWhenThereIsRoom() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 2, inboxWindowWait: .seconds(1))
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        let waits = Mutex(0)
        let count: @Sendable () -> Void = { waits.withLock { $0 += 1 } }
        // The first offer may wait for the engine's first word (its load);
        // that is no wait for room, and not said.
        _ = await handOver([try harness.envelope("k1", version: 1)], to: sender, whenWaiting: count).value
        #expect(waits.withLock { $0 } == 0, "one drop fits the window: no wait")
        let start = harness.clock.now
        let offer = handOver([try harness.envelope("k2", version: 1)], to: sender, whenWaiting: count)
        await harness.clock.waitForSleeper(until: start + .seconds(1))
        #expect(waits.withLock { $0 } == 1, "told before it waits, while the window is full")
        harness.clock.advance(by: .seconds(1))
        _ = await offer.value
    }

    @Test func aBatchWaitsForRoomForAllOfItsDropsInsteadOfSpillingIntoQueue() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 4, inboxWindowWait: .seconds(1))
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        await engine.offer(try (1...3).map { try harness.envelope("k\($0)", version: 1) })
        await harness.transport.waitForRequests(1)
        let start = harness.clock.now
        let waits = Mutex(0)
        let offer = handOver(try (4...5).map { try harness.envelope("k\($0)", version: 1) }, to: sender,
                             whenWaiting: { waits.withLock { $0 += 1 } })
        await harness.clock.waitForSleeper(until: start + .seconds(1))
        #expect(waits.withLock { $0 } == 1, "room for one of the two: it waits before placing either")
        #expect(harness.names(in: "queue") == [], "neither went to queue/")
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        _ = await offer.value
        await harness.status.waitFor { $0.delivered == 5 }
        #expect(harness.log.entries(withMessageID: MessageID.accepted).isEmpty,
                "every key waited in new/ and was delivered from there")
        #expect(harness.names(in: "done") == ["k1", "k2", "k3", "k4", "k5"])
    }

    @Test func anOfferAtTheHighWaterMarkWaitsBrieflyThenSaysTheEngineIsFull() async throws {
        // Three pending keys at most; one attempt at a time, which hangs.
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 0,
                                               inboxWindowWait: .seconds(1), highWater: 3, lowWater: 2)
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let first = await engine.offer(try (1...2).map { try harness.envelope("k\($0)", version: 1) })
        #expect(!first.full, "two pending keys: room")
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        let start = harness.clock.now
        let waits = Mutex(0)
        let offer = handOver([try harness.envelope("k3", version: 1)], to: sender,
                             whenWaiting: { waits.withLock { $0 += 1 } })
        // It waits (intake also executes ctl/ requests, so not for ever) ...
        await harness.clock.waitForSleeper(until: start + .seconds(1))
        #expect(waits.withLock { $0 } == 1)
        harness.clock.advance(by: .seconds(1))
        // ... and then tells intake to take no more drops for now.
        #expect(await offer.value.full)
        #expect(harness.names(in: "queue").filter { !$0.hasSuffix(".state") } == ["k1", "k2", "k3"])
        let status = await engine.currentStatus
        #expect(status.intakeWaitsBelow == 2)
        #expect(status.line.hasSuffix("; new/ waits until fewer than 2 are queued"), "\(status.line)")
    }

    @Test func anOfferWhoseWaitRanOutIsFullOnlyByTheEnginesOwnCount() async throws {
        // The window (two) is full and two keys are pending, one below the
        // high-water mark (three). A newer snapshot of a pending key waits
        // for the window, gives up, and goes over: counted as a new key in
        // transit it would make three, but it only replaces one.
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 2,
                                               inboxWindowWait: .seconds(1), highWater: 3, lowWater: 2)
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        await engine.offer(try (1...2).map { try harness.envelope("k\($0)", version: 1) })
        let start = harness.clock.now
        let offer = handOver([try harness.envelope("k2", version: 2)], to: sender)
        await harness.clock.waitForSleeper(until: start + .seconds(1))
        harness.clock.advance(by: .seconds(1))
        #expect(await !offer.value.full, "two keys pending, as the engine counts them")
        #expect(await engine.currentStatus.intakeWaitsBelow == nil)
    }

    /// A key waiting in new/ for its first attempt was verified by intake
    /// under the configuration before a reload (here AcceptEnvelopes=yes,
    /// as an app removed or an environment dropped would be): its attempt
    /// reads and verifies its file again, and holds what no longer passes.
    /// (a hangs; b is the second attempt the engine keeps outstanding,
    /// in flight with what it was launched with; c waits.)
    @Test(.timeLimit(.minutes(1)))
    func aReloadHasWhatWaitsForItsFirstAttemptVerifiedAgain() async throws {
        let transport = ScriptedTransport(default: .status(200), workers: 1)
        transport.script("a", [.hang])
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, stopGrace: .seconds(5))
        let harness = try EngineHarness(settings: settings, transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await transport.waitForRequests(1)
        await engine.offer([try harness.envelope("b", version: 1, name: "b-drop"),
                            try harness.envelope("c", version: 1, name: "c-drop")])
        var reloaded = settings
        reloaded.acceptEnvelopes = false
        let builder = RequestBuilder(softwareVersion: "test", secrets: BackendSecrets())
        await engine.reconfigure(settings: reloaded, transport: transport, prepare: { item, attempt, receivedAt, now in
            builder.request(for: item, attempt: attempt, receivedAt: receivedAt, signedAt: now / 1000)
        })
        transport.releaseHeld(with: .status(200))
        let status = await harness.status.waitFor { $0.held == 1 }
        #expect(status.queued == 0)
        #expect(transport.requestedKeys == ["a", "b"], "c was not sent as intake verified it")
        #expect(harness.names(in: "hold") == ["c", "c.reason"])
        let reason = String(decoding: try SystemCall.readFile(harness.layout.hold + "/c.reason", limit: 1 << 16),
                            as: UTF8.self)
        #expect(reason.hasPrefix("new/c-drop, waiting for its first attempt, no longer decodes or verifies"), "\(reason)")
        #expect(harness.names(in: "new") == [])
    }

    @Test func intakesReportsArePostedWithoutWaitingForTheEngineAndCountedInOrder() async throws {
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(),
                                        transport: ScriptedTransport(default: .hang, workers: 1))
        let engine = try await harness.startedEngine()
        // The engine's thread is held busy: posting must not wait for it
        // (if it did, this test would never reach `signal` and hit its
        // suite's time limit).
        let busy = DispatchSemaphore(value: 0)
        engine.executor.submit { busy.wait() }
        engine.post { $0.noteRejected(count: 2) }
        engine.post { $0.noteIntakePaused("the spool is full") }
        engine.post { $0.noteRejectedCount(1) }
        busy.signal()
        // A look at the engine queued after the posts sees them all.
        let status = await engine.currentStatus
        #expect(status.rejected == 1 && status.statistics.rejected == 2)
        #expect(status.intakePausedBecause == "the spool is full")
    }

    @Test func theEngineAsksIntakeToReadNewAgainOnceBelowTheLowWaterMark() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 0,
                                               inboxWindowWait: .seconds(1), highWater: 3, lowWater: 2)
        // One request at a time reaches the transport (the engine hands it
        // more than it sends at once), so each release ends one attempt.
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang, workers: 1))
        let engine = try await harness.startedEngine()
        let rescans = Mutex(0)
        await engine.onInboxNeedsRescan { rescans.withLock { $0 += 1 } }
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        let offer = handOver(try (1...3).map { try harness.envelope("k\($0)", version: 1) }, to: sender)
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))
        harness.clock.advance(by: .seconds(1))
        #expect(await offer.value.full)
        // 3 -> 2 pending: not below the low-water mark yet.
        await harness.transport.waitForRequests(1)
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 1 }
        await harness.transport.waitForRequests(2)
        #expect(rescans.withLock { $0 } == 0)
        // 2 -> 1: below it; intake is asked to read new/ again, once.
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 2 }
        await harness.transport.waitForRequests(3)
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 3 }
        #expect(rescans.withLock { $0 } == 1)
        #expect(await engine.currentStatus.intakeWaitsBelow == nil, "STATUS no longer says new/ waits")
    }

    @Test func retryingAKeyThatNeverFailedLeavesNoStateFileBehind() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 0)
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang, workers: 1))
        let engine = try await harness.startedEngine()
        await engine.offer(try (1...3).map { try harness.envelope("k\($0)", version: 1) })
        await harness.transport.waitForRequests(1)
        let result = await engine.perform(ControlRequest(.retry, all: true))
        #expect(!result.applied.isEmpty, "a key not in flight was retried")
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 3 }
        #expect(harness.names(in: "queue") == [])
        #expect(harness.names(in: "done") == ["k1", "k2", "k3"])
    }

    @Test func intakeStopsWaitingForTheWindowAsAttemptsEnd() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 2, inboxWindowWait: .seconds(1))
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        let offer = handOver(try (1...2).map { try harness.envelope("k\($0)", version: 1) }, to: sender)
        await harness.transport.waitForRequests(1)
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        // Returns with the manual clock never advanced: room, not the wait's end.
        _ = await offer.value
        await harness.status.waitFor { $0.delivered == 2 }
    }

    /// Intake decides to wait on the load it was last told; the attempts
    /// that make room can end right then, before it sleeps, and the room
    /// they make must still wake it.
    @Test func intakeSeesRoomMadeJustAsItBeginsToWait() async throws {
        let settings = DeliveryEngine.Settings(maxConcurrentDeliveries: 1, inboxWindow: 2, inboxWindowWait: .seconds(1))
        let harness = try EngineHarness(settings: settings, transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let sender = try IntakeHandOff(engine: engine, sender: "test")
        await engine.offer(try (1...2).map { try harness.envelope("k\($0)", version: 1) })
        await harness.transport.waitForRequests(2)
        // The engine's thread is held: the sender finds the window full on
        // the load it has, posts its batch and waits; the attempts' ends
        // queue up behind the hold, after the batch.
        let (held, release) = await EngineHarness.holdingEngineThread { await engine.currentStatus }
        let offering = handOver([try harness.envelope("k3", version: 1)], to: sender)
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        await harness.transport.waitForFinishedExchanges(2)
        release()
        _ = await held.value
        // The window had room again: the offer returns with the manual
        // clock never advanced, unless it missed the attempts' end and
        // waits out its timer.
        #expect(await harness.endsWithoutTheClock(Task { _ = await offering.value }, unstick: settings.inboxWindowWait),
                "intake waited out inboxWindowWait although the window had room")
        await harness.status.waitFor { $0.delivered == 3 }
    }

    @Test func whileTheBackendFailsFreshKeysGoToQueue() async throws {
        let transport = ScriptedTransport(default: .status(503))
        transport.script("d", [.hang])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer(try (1...3).map { try harness.envelope("k\($0)", version: 1) })
        await harness.status.waitFor { if case .failing = $0.backend { true } else { false } }
        await engine.offer([try harness.envelope("d", version: 1)])
        // The first probe, one step (1 s) after the outage began: "d", due first.
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))
        harness.clock.advance(by: .seconds(1))
        await transport.waitForRequests(4)
        #expect(transport.requestedKeys.last == "d")
        #expect(harness.names(in: "queue").contains("d"), "in queue/ while its first attempt is in flight")
        #expect(harness.names(in: "new") == [])
    }

    @Test func aFailedFirstAttemptWhoseFileCannotMoveStaysInNewAndIsRetried() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        #expect(rmdir(harness.layout.queue) == 0)
        let drop = try harness.envelope("a", version: 1)
        await engine.offer([drop])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        #expect(harness.names(in: "new") == [drop.name])
        harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "done") == ["a"])
        #expect(harness.transport.requests.map { $0.header("Idempotency-Key") } == ["a:1", "a:1"])
    }

    // MARK: Backoff

    /// The item's own schedule is recorded at every failure; from the third
    /// failure in a row on, the backend counts as failing and the probe
    /// schedule (1 s 2 s 5 s 10 s) says when the next request goes.
    @Test func failuresFollowTheScheduleAndRepeatItsLastStep() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(503)))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        // One key failing alone is not an outage: no probe ever sends it
        // sooner than its own step.
        let recorded: [Int64] = [2, 5, 15, 30, 60, 300, 300, 300]
        for (index, (own, wait)) in zip(recorded, recorded).enumerated() {
            await harness.transport.waitForRequests(index + 1)
            let delay = Duration.seconds(wait)
            await harness.clock.waitForSleeper(until: harness.clock.now + delay)
            let deferral = harness.log.entries.last { entry in
                entry.fields.contains { $0.name == "TXRECON_OUTCOME" && $0.value == "deferred" }
            }
            let next = deferral?.fields.first { $0.name == "TXRECON_NEXT_ATTEMPT_USEC" }?.value
            #expect(next == String((harness.clock.wallMilliseconds + own * 1000) * 1000),
                    "failure \(index + 1) records the item's own step, \(own) s")
            harness.clock.advance(by: delay - .milliseconds(1))
            #expect(harness.transport.requests.count == index + 1, "no attempt before the delay has passed")
            harness.clock.advance(by: .milliseconds(1))
        }
        await harness.transport.waitForRequests(recorded.count + 1)
        let attempts = harness.transport.requests.map { try? JSONValue.parse($0.body)["attempt"]?.int64Value }
        #expect(attempts == (1...9).map { Int64($0) })
    }

    @Test func retryAfterRaisesTheDelayButNotBeyondAnHour() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503, retryAfter: "120"), .status(429, retryAfter: "86400")])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(120))
        harness.clock.advance(by: .seconds(120))
        await transport.waitForRequests(2)
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(3600))
        harness.clock.advance(by: .seconds(3600))
        await harness.status.waitFor { $0.delivered == 1 }
    }

    @Test func retryAfterNeverShortensTheSchedule() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503, retryAfter: "0"), .status(503, retryAfter: "1")])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        await transport.waitForRequests(2)
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(5))
    }

    @Test func theTimerIsDisarmedOnceTheQueueDrains() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.clock.sleeperDeadlines.isEmpty)
    }

    @Test func aLaterDeliveryOfAKeyThatNeverFailedLeavesNoEarlierFailureRecordInDone() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.waitForDoneIndex()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.delivered == 1 }
        // Nothing is due, so the record's move is the next job on the engine
        // thread; this call queues behind it.
        _ = await engine.currentStatus
        #expect(harness.names(in: "done") == ["a", "a.state"], "version 1 failed once, then was delivered")

        await engine.offer([try harness.envelope("a", version: 2)])
        await harness.status.waitFor { $0.delivered == 2 }
        #expect(harness.names(in: "done") == ["a"], "version 2 went at once: no record of version 1's failure beside it")
        await engine.stop()
    }

    /// Key a fails once and is delivered at its retry while an attempt is
    /// still due (so its record waits in queue/): b and c hold the engine's
    /// two places until a's retry is due, then d, e and f, which hang too,
    /// take them after a, and one of the three is always left waiting.
    /// `later`: a's replies after its 503 and 200.
    private func keyDeliveredAfterAFailureWhileAnAttemptIsDue(later: [ScriptedTransport.Reply] = [])
        async throws -> (EngineHarness, DeliveryEngine, ScriptedTransport) {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503), .status(200)] + later)
        for key in ["b", "c", "d", "e", "f"] { transport.script(key, [.hang]) }
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(maxConcurrentDeliveries: 1, stopGrace: .seconds(5)),
                                        transport: transport)
        let engine = try await harness.startedEngine()
        let start = harness.clock.now
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: start + .seconds(2))
        await engine.offer([try harness.envelope("b", version: 1), try harness.envelope("c", version: 1)])
        await transport.waitForRequests(3)
        harness.clock.advance(by: .milliseconds(2001))
        await engine.offer(try ["d", "e", "f"].map { try harness.envelope($0, version: 1) })
        transport.releaseHeld(with: .status(200))
        await harness.status.waitFor { $0.delivered == 3 }
        await transport.waitForRequests(6)
        _ = await engine.currentStatus
        return (harness, engine, transport)
    }

    @Test func aRetriedItemsRecordFollowsItIntoDoneBeforeTheKeysNextAttemptWritesItsOwn() async throws {
        let (harness, engine, transport) = try await keyDeliveredAfterAFailureWhileAnAttemptIsDue(later: [.status(500)])
        #expect(Set(harness.names(in: "done")) == ["a", "b", "c"])
        #expect(harness.names(in: "queue") == ["a.state"], "an attempt is due: the record waits")

        // Version 2 of a, and h behind it: an attempt is still due when
        // version 2's first attempt starts, and after it failed.
        transport.script("h", [.hang])
        await engine.offer([try harness.envelope("a", version: 2)])
        harness.clock.advance(by: .milliseconds(1))
        await engine.offer([try harness.envelope("h", version: 1)])
        transport.releaseHeld(with: .status(200))
        await transport.waitForRequests(9)
        await harness.status.waitFor { $0.delivered == 5 && $0.statistics.deferred == 2 }
        _ = await engine.currentStatus
        let delivered = try #require(DeliveryState(json: try SystemCall.readFile(harness.layout.done + "/a.state", limit: 4096)))
        let pending = try #require(DeliveryState(json: try SystemCall.readFile(harness.layout.queue + "/a.state", limit: 4096)))
        #expect(delivered.lastError == "HTTP 503", "version 1's failure, beside version 1 in done/")
        #expect(pending.lastError == "HTTP 500", "version 2's failure stays with version 2 in queue/")
        transport.releaseHeld(with: .status(200))
        await engine.stop()
    }

    @Test func stoppingMovesTheRecordsStillWaiting() async throws {
        let (harness, engine, transport) = try await keyDeliveredAfterAFailureWhileAnAttemptIsDue()
        #expect(harness.names(in: "queue") == ["a.state"])
        let stopping = Task { await engine.stop() }
        await harness.status.waitFor { $0.phase == "stopping" }
        transport.releaseHeld(with: .status(200))
        await stopping.value
        #expect(harness.names(in: "queue") == [])
        #expect(harness.names(in: "done").filter { $0.hasPrefix("a") } == ["a", "a.state"])
    }

    @Test func anIdleEngineArmsNoTimer() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        #expect(harness.clock.sleeperDeadlines.isEmpty)
        await engine.stop()
    }

    // MARK: Concurrency

    @Test func concurrentAttemptsReachTheCapAndNeverExceedIt() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        await engine.offer(try (1...10).map { try harness.envelope("k\($0)", version: 1) })
        await harness.transport.waitForRequests(4)
        #expect(harness.transport.inFlight == 4)
        harness.transport.setDefault(.status(204))
        harness.transport.releaseHeld(with: .status(204))
        await harness.status.waitFor { $0.delivered == 10 }
        #expect(harness.transport.maximumInFlight == 4)
        #expect(harness.transport.requests.count == 10)
    }

    @Test func oneHungKeyDoesNotHoldUpTheOthers() async throws {
        let transport = ScriptedTransport()
        transport.script("slow", [.hang])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        let slow = try harness.envelope("slow", version: 1)
        await engine.offer([slow])
        await transport.waitForRequests(1)
        await engine.offer(try (1...5).map { try harness.envelope("k\($0)", version: 1) })
        await harness.status.waitFor { $0.delivered == 5 }
        #expect(harness.names(in: "new") == [slow.name], "a first attempt still in flight, its file still in new/")
    }

    @Test func aNewerSnapshotArrivingDuringAnAttemptWaitsForIt() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.hang])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await transport.waitForRequests(1)
        let newer = try harness.envelope("a", version: 2)
        await engine.offer([newer])
        #expect(transport.requests.count == 1, "never two attempts of one key at once")
        #expect(harness.exists("new/" + newer.name), "the waiting snapshot stays in new/ until its turn")
        transport.releaseHeld(with: .status(200))
        await harness.status.waitFor { $0.delivered == 2 }
        #expect(transport.requests.map { $0.header("Idempotency-Key") } == ["a:1", "a:2"])
        #expect(transport.maximumInFlight == 1)
    }

    // MARK: Supersede

    @Test func aNewerSnapshotReplacesAPendingOlderOne() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        await engine.offer([try harness.envelope("a", version: 2)])
        #expect(harness.names(in: "done").contains { $0.hasPrefix("a.superseded-1") })
        harness.clock.advance(by: .seconds(2))
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(transport.requests.map { $0.header("Idempotency-Key") } == ["a:1", "a:2"])
        let body = try JSONValue.parse(transport.requests[1].body)
        #expect(body["attempt"]?.int64Value == 2, "the replacement inherits the key's backoff and attempt count")
    }

    @Test func anOlderOrEqualSnapshotThanThePendingOneIsSuperseded() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(503)))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 5)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        await engine.offer([try harness.envelope("a", version: 4), try harness.envelope("a", version: 5)])
        #expect(harness.names(in: "done").filter { $0.hasPrefix("a.superseded-") }.count == 2)
        #expect(harness.names(in: "new") == [])
        #expect(harness.transport.requests.count == 1)
    }

    @Test func aSnapshotNotNewerThanTheDeliveredOneIsNeverDelivered() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 7)])
        await harness.status.waitFor { $0.delivered == 1 }
        await engine.offer([try harness.envelope("a", version: 6), try harness.envelope("a", version: 7)])
        await harness.status.waitFor { $0.superseded == 2 }
        #expect(harness.transport.requests.count == 1)
        await engine.offer([try harness.envelope("a", version: 8)])
        await harness.status.waitFor { $0.delivered == 2 }
    }

    @Test func aSnapshotNotNewerThanOneDeliveredBeforeARestartIsNeverDelivered() async throws {
        let harness = try EngineHarness()
        let first = harness.makeEngine()
        try await first.start()
        await first.offer([try harness.envelope("a", version: 7)])
        await harness.status.waitFor { $0.delivered == 1 }
        await first.stop()
        let second = harness.makeEngine()
        try await second.start()
        await second.offer([try harness.envelope("a", version: 7)])
        await harness.status.waitFor { $0.superseded == 1 }
        #expect(harness.transport.requests.count == 1, "done/ read at start tells the second engine about a:7")
    }

    @Test func aNewerSnapshotReplacesAHeldOne() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(422)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.held == 1 }
        await engine.offer([try harness.envelope("a", version: 2)])
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "hold") == [])
        #expect(harness.names(in: "done").contains { $0.hasPrefix("a.superseded-1") })
    }

    // MARK: Restart, stop, operators

    @Test func aRestartRebuildsTheQueueAndKeepsTheBackoff() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let first = harness.makeEngine()
        try await first.start()
        await first.offer([try harness.envelope("a", version: 1)])
        for (count, delay) in [(1, 2), (2, 5)] {
            await transport.waitForRequests(count)
            await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(delay))
            harness.clock.advance(by: .seconds(delay))
        }
        await transport.waitForRequests(3)
        // The item's own next step, 15 s, is what the engine waits for and
        // what is persisted.
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(15))
        await first.stop()

        transport.setDefault(.status(200))
        let second = harness.makeEngine()
        try await second.start()
        #expect(transport.requests.count == 3, "the persisted backoff holds across the restart")
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(15))
        harness.clock.advance(by: .seconds(15))
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(try JSONValue.parse(transport.requests[3].body)["attempt"]?.int64Value == 4)
    }

    @Test func aWallClockJumpBackDoesNotStallRestoredItems() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let first = harness.makeEngine()
        try await first.start()
        await first.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        await first.stop()
        harness.clock.jumpWallClock(by: -86_400_000)
        let second = harness.makeEngine()
        try await second.start()
        await harness.clock.waitForSleepers { $0.count == 1 }
        let deadline = try #require(harness.clock.sleeperDeadlines.first)
        #expect(deadline <= harness.clock.now + RetrySchedule.standard.longestDelay)
    }

    @Test func stoppingDuringAnAttemptFinishesNothingUndelivered() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        let drop = try harness.envelope("a", version: 1)
        await engine.offer([drop])
        await harness.transport.waitForRequests(1)
        async let stopped: Void = engine.stop()
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(5))
        harness.clock.advance(by: .seconds(5))
        await stopped
        #expect(harness.names(in: "new") == [drop.name], "read again at the next start")
        #expect(harness.names(in: "done") == [])
    }

    /// stop() suspends on its way to waiting for the attempts in flight;
    /// the last one can end right then, and stop must still see it.
    @Test func stopSeesTheLastAttemptEndJustAsItBeginsToWait() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.transport.waitForRequests(1)
        let (stopping, release) = await EngineHarness.holdingEngineThread { await engine.stop() }
        harness.transport.releaseHeld(with: .status(204))
        await harness.transport.waitForFinishedExchanges(1)
        release()
        // Nothing is in flight any more: stop returns, its grace cancelled,
        // unless it missed the attempt's end and sleeps on.
        #expect(await harness.endsWithoutTheClock(stopping, unstick: harness.settings.stopGrace),
                "stop waited for the grace although no attempt was in flight")
        #expect(harness.names(in: "done") == ["a"])
    }

    @Test func releaseMovesAHeldItemBackAndDeliversIt() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(409)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.held == 1 }
        let result = await engine.perform(ControlRequest(.release, targets: ["a", "b"]))
        #expect(result.applied == ["a"])
        #expect(result.skipped.map(\.target) == ["b"])
        await harness.status.waitFor { $0.delivered == 1 }
        #expect(harness.names(in: "hold") == [])
    }

    @Test func retryMakesAWaitingItemDueNow() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        let result = await engine.perform(ControlRequest(.retry, all: true))
        #expect(result.applied == ["a"])
        await harness.status.waitFor { $0.delivered == 1 }
    }

    @Test func aReplayAskedForWhileItsKeyIsInFlightIsDecidedWhenTheAttemptEnds() async throws {
        // done/k holds version 1 when the replay's copy is made; version 2
        // is in flight and delivered onto done/k before the copy is queued.
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("k", version: 1)])
        await harness.status.waitFor { $0.delivered == 1 }
        harness.transport.setDefault(.hang)
        await engine.offer([try harness.envelope("k", version: 2)])
        await harness.transport.waitForRequests(2)
        let staged = try harness.spool.stageReplay(DeliveredSnapshot(key: try #require(ItemKey("k")), receivedAt: 0), maximumSize: 1 << 20)
        let answer = await engine.replay([staged]).result
        #expect(answer.applied == ["k"] && answer.skipped.isEmpty, "answered now, decided at the attempt's end")
        harness.transport.releaseHeld(with: .status(200))
        let status = await harness.status.waitFor { $0.delivered == 2 }
        #expect(status.statistics.replayed == 0)
        #expect(harness.transport.requestedKeys == ["k", "k"], "version 1 never goes out after version 2")
        #expect(harness.names(in: "queue") == [], "the copy is removed")
        #expect(harness.log.entries.contains { $0.message.hasPrefix("k: the replay asked for while it was being delivered "
                                                                     + "is not queued: delivered again") })
    }

    @Test func theBackendCountsAsFailingOnceThreeKeysFailInARowAndStatusSaysSince() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(503)))
        let engine = try await harness.startedEngine()
        let failingSince = harness.clock.wallMilliseconds
        await engine.offer([try harness.envelope("a", version: 1)])
        for delay in [2, 5] {
            await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(delay))
            #expect(harness.status.latest?.backend != .failing(since: failingSince, lastError: "HTTP 503"),
                    "one key failing again is not an outage")
            if delay == 2 { harness.clock.advance(by: .seconds(delay)) }
        }
        await engine.offer([try harness.envelope("b", version: 1), try harness.envelope("c", version: 1)])
        let status = await harness.status.waitFor {
            if case .failing = $0.backend { return $0.delivering == 0 } else { return false }
        }
        #expect(status.backend == .failing(since: failingSince, lastError: "HTTP 503"))
        #expect(status.nextRetryAt == harness.clock.wallMilliseconds + 2_000,
                "the first probe: b's own next attempt (2 s), later than the probe step (1 s)")
        #expect(status.line.contains("backend failing since"))
    }

    @Test func whenTheBackendRecoversKeysWaitingForItAreDueAtOnce() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer(try (1...3).map { try harness.envelope("k\($0)", version: 1) })
        await transport.waitForRequests(3)
        await harness.status.waitFor { if case .failing = $0.backend { return true } else { return false } }
        // The backend is back: a new key, due first, is the first probe
        // (1 s on) and is delivered. The three waiting keys go at once
        // instead of after their 2 s step; the clock moves no further.
        transport.setDefault(.status(200))
        await engine.offer([try harness.envelope("fresh", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))
        harness.clock.advance(by: .seconds(1))
        await harness.status.waitFor { $0.delivered == 4 }
        #expect(transport.requests.count == 7)
        #expect(transport.requestedKeys[3] == "fresh")
        #expect(harness.clock.sleeperDeadlines.isEmpty)
    }

    @Test func anAttemptSentBeforeTheBackendCameBackAndFailedAfterGoesAgainAtOnce() async throws {
        let transport = ScriptedTransport(default: .status(503))
        transport.script("late", [.hang])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("late", version: 1)])
        await engine.offer(try (1...3).map { try harness.envelope("k\($0)", version: 1) })
        await transport.waitForRequests(4)
        await harness.status.waitFor { if case .failing = $0.backend { return true } else { return false } }
        // The backend is back from the next attempt on, the first probe
        // (1 s on, not held up by "late", which is still out); "late" was
        // sent before and gets the outage's last 503 only now.
        transport.setDefault(.status(200))
        await engine.offer([try harness.envelope("fresh", version: 1)])
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))
        harness.clock.advance(by: .seconds(1))
        await harness.status.waitFor { $0.delivered == 4 }
        transport.releaseHeld(with: .status(503))
        await harness.status.waitFor { $0.statistics.deferred == 4 }
        let deferral = harness.log.entries.last { entry in
            entry.fields.contains { $0.name == "TXRECON_ID" && $0.value == "late" }
                && entry.fields.contains { $0.name == "TXRECON_OUTCOME" && $0.value == "deferred" }
        }
        let next = deferral?.fields.first { $0.name == "TXRECON_NEXT_ATTEMPT_USEC" }?.value
        try #require(next == String(harness.clock.wallMilliseconds * 1000), "due now, not after its 2 s step")
        // The clock does not move again: the retry goes at once.
        await harness.status.waitFor { $0.delivered == 5 }
        #expect(transport.requestedKeys.filter { $0 == "late" }.count == 2)
        #expect(harness.status.history.last.map { if case .failing = $0.backend { false } else { true } } == true,
                "a failure from before the recovery does not count against the backend")
        await engine.stop()
    }

    @Test func oneKeyFailingAmongDeliveriesIsNotAnOutage() async throws {
        let transport = ScriptedTransport()
        transport.script("bad", [.status(503), .status(503), .status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("bad", version: 1), try harness.envelope("good1", version: 1)])
        await harness.status.waitFor { $0.delivered == 1 }
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        await transport.waitForRequests(3)
        await engine.offer([try harness.envelope("good2", version: 1)])
        await harness.status.waitFor { $0.delivered == 2 }
        #expect(harness.status.history.allSatisfy { if case .failing = $0.backend { false } else { true } })
        // "bad" keeps its own schedule: 5 s after its second failure.
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(5))
    }

    /// A backend that refuses one item with 503 forever: the item keeps
    /// its own schedule (2 s, 5 s, 15 s, … then 5 min forever), never the
    /// probes' 10 s, and the backend is never said to be failing.
    @Test func aKeyFailingAloneFollowsItsOwnScheduleExactly() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("bad", version: 1)])
        await transport.waitForRequests(1)
        for (failures, delay) in [2, 5, 15, 30, 60, 300, 300, 300].enumerated() {
            await harness.clock.waitForSleepers { !$0.isEmpty }
            #expect(harness.clock.sleeperDeadlines.min() == harness.clock.now + .seconds(delay),
                    "after failure \(failures + 1) the next attempt is \(delay) s on, no earlier")
            harness.clock.advance(by: .seconds(delay))
            await transport.waitForRequests(failures + 2)
        }
        await transport.waitForFinishedExchanges(9)
        #expect(transport.requests.count == 9)
        #expect(harness.status.history.allSatisfy { if case .failing = $0.backend { false } else { true } })
        await engine.stop()
    }

    // MARK: A failing backend is spared

    /// Offers `count` keys to a backend answering 503 and returns once the
    /// outage has begun and no attempt is out.
    static func outage(of count: Int, _ harness: EngineHarness, _ engine: DeliveryEngine) async throws {
        await engine.offer(try (1...count).map { try harness.envelope("k\($0)", version: 1) })
        await harness.status.waitFor { status in
            guard case .failing = status.backend else { return false }
            return status.delivering == 0
        }
    }

    @Test func aFailingBackendGetsOneProbeAtATimeOnTheProbeSchedule() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        try await Self.outage(of: 40, harness, engine)
        let before = transport.requests.count
        #expect(before < 40, "the outage began before every key was tried")
        // 70 s: every key's own 2 s, 5 s, 15 s and 30 s steps pass; 9 probes.
        for (index, step) in [1, 2, 5, 10, 10, 10, 10, 10, 10].enumerated() {
            let delay = Duration.seconds(step)
            await harness.clock.waitForSleeper(until: harness.clock.now + delay)
            harness.clock.advance(by: delay - .milliseconds(1))
            #expect(transport.requests.count == before + index, "no probe before its step has passed")
            harness.clock.advance(by: .milliseconds(1))
            await transport.waitForRequests(before + index + 1)
            await harness.status.waitFor { $0.delivering == 0 && $0.statistics.deferred == before + index + 1 }
            #expect(transport.requests.count == before + index + 1, "one request per probe")
        }
        #expect(harness.status.latest?.queued == 40, "nothing is dropped, delivered or held")
    }

    /// During an outage each probe is the key whose own next attempt comes
    /// first, sent at that time or the probe step's, whichever is later:
    /// no key goes before its schedule, and at most one request goes per
    /// probe step. Walks 20 probes of three keys, timer by timer.
    @Test func whileTheBackendFailsNoKeyGoesBeforeItsOwnNextAttempt() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        try await Self.outage(of: 3, harness, engine)
        let began = harness.clock.now
        #expect(transport.requests.count == 3)
        var own = Dictionary(uniqueKeysWithValues: ["k1", "k2", "k3"].map { ($0, (failures: 1, last: began)) })
        var lastProbe = began, failedProbes = 0
        for probe in 1...20 {
            await harness.clock.waitForSleepers { !$0.isEmpty }
            #expect(transport.requests.count == 2 + probe, "nothing else went out since the last probe")
            let next = try #require(harness.clock.sleeperDeadlines.min())
            harness.clock.advance(by: next - harness.clock.now)
            await transport.waitForRequests(3 + probe)
            await transport.waitForFinishedExchanges(3 + probe)
            let key = transport.requestedKeys[2 + probe]
            let record = try #require(own[key])
            let due = record.last + RetrySchedule.standard.delay(afterFailedAttempts: record.failures)
            #expect(next >= due, "probe \(probe): \(key) went \(due - next) before its own next attempt")
            let probeDue = lastProbe + RetrySchedule.probing.delay(afterFailedAttempts: failedProbes + 1)
            #expect(next >= probeDue, "probe \(probe) went before its step")
            #expect(next == max(probeDue, own.values.map {
                $0.last + RetrySchedule.standard.delay(afterFailedAttempts: $0.failures)
            }.min()!), "probe \(probe) went as soon as both allowed it")
            own[key] = (record.failures + 1, next)
            lastProbe = next
            failedProbes += 1
        }
        #expect(harness.status.latest?.queued == 3)
        await engine.stop()
    }

    @Test func theFirstAnswerToAProbeEndsTheOutageAndEveryWaitingItemGoesAtOnce() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        try await Self.outage(of: 40, harness, engine)
        transport.setDefault(.status(204))
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))
        harness.clock.advance(by: .seconds(1))
        // The keys that failed wait for their own steps (2 s and more) no
        // longer: the clock does not move again.
        await harness.status.waitFor { $0.delivered == 40 }
        #expect(harness.status.latest?.backend == .ok)
        #expect(harness.log.entries.contains { $0.messageID == MessageID.backendRecovered })
    }

    @Test func aRetryAfterOnAProbesAnswerPutsTheNextProbeOff() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        try await Self.outage(of: 3, harness, engine)
        transport.setDefault(.status(503, retryAfter: "120"))
        // The first probe: the keys' own next attempt, 2 s on.
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        await transport.waitForRequests(4)
        let asked = harness.clock.now + .seconds(120)
        await harness.clock.waitForSleeper(until: asked)
        harness.clock.advance(by: .seconds(119))
        #expect(transport.requests.count == 4, "not at the schedule's 2 s step: the backend asked for 120 s")
        harness.clock.advance(by: .seconds(1))
        await transport.waitForRequests(5)
    }

    @Test func aRetryDuringAnOutageSendsTheProbeAtOnce() async throws {
        let transport = ScriptedTransport(default: .status(503))
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        try await Self.outage(of: 3, harness, engine)
        transport.setDefault(.status(200))
        let result = await engine.perform(ControlRequest(.retry, targets: ["k2"]))
        #expect(result.applied == ["k2"])
        // The clock never moves: the retried key is the probe, and its
        // answer ends the outage for the other two.
        await harness.status.waitFor { $0.delivered == 3 }
        #expect(transport.requestedKeys[3] == "k2")
    }

    @Test func maxRateSpacesRequestsOutProbesIncluded() async throws {
        let transport = ScriptedTransport(default: .status(204))
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(stopGrace: .seconds(5), maxRate: 1),
                                        transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer(try (1...3).map { try harness.envelope("k\($0)", version: 1) })
        await harness.status.waitFor { $0.delivered == 1 }
        for second in 1...2 {
            await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(1))
            harness.clock.advance(by: .milliseconds(999))
            #expect(transport.requests.count == second, "one request a second")
            harness.clock.advance(by: .milliseconds(1))
            await harness.status.waitFor { $0.delivered == second + 1 }
        }
    }

    /// The system clock reads later at every reading. An engine that read
    /// it twice in one decision saw a token "now" as a start just after its
    /// own now, never due, and spun on its timer without sending anything.
    @Test func maxRateSendsWithAClockThatMovesAtEveryReading() async throws {
        let transport = ScriptedTransport(default: .status(204))
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(stopGrace: .seconds(5), maxRate: 1000),
                                        clock: ManualClock(tickPerReading: .nanoseconds(1)), transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer(try (1...3).map { try harness.envelope("k\($0)", version: 1) })
        var delivered = 0
        for _ in 0..<200_000 where delivered < 3 {
            delivered = await engine.currentStatus.delivered
            await Task.yield()
        }
        #expect(delivered == 3, "three requests within the bucket's 1,000 tokens, at once")
    }
}
