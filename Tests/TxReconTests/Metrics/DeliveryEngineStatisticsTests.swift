// What the engine counts for the metrics file, on a manual clock and a
// scripted transport: outcomes, the backend's failure streak, attempt
// durations and the oldest queued arrival. No test here sleeps.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1)))
struct DeliveryEngineStatisticsTests {
    @Test func anAttemptIsTimedOnTheEngineClockFromLaunchToAnswer() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .hang))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.transport.waitForRequests(1)
        harness.clock.advance(by: .milliseconds(30))
        harness.transport.releaseHeld(with: .status(200))
        let durations = await harness.status.waitFor { $0.delivered == 1 }.statistics.attemptDurations
        #expect(durations.count == 1)
        #expect(durations.sum == .milliseconds(30))
        let bucket = try #require(durations.bounds.firstIndex(of: .milliseconds(50)))
        #expect(durations.cumulativeCounts[bucket - 1] == 0)
        #expect(durations.cumulativeCounts[bucket] == 1)
    }

    @Test func failedAttemptsCountAsDeferredAndLengthenTheFailureStreak() async throws {
        let harness = try EngineHarness(transport: ScriptedTransport(default: .status(503)))
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        let first = await harness.status.waitFor { $0.statistics.deferred == 1 }
        #expect(first.statistics.consecutiveBackendFailures == 1)
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        let second = await harness.status.waitFor { $0.statistics.deferred == 2 }
        #expect(second.statistics.consecutiveBackendFailures == 2)
        #expect(second.statistics.attemptDurations.count == 2)
    }

    @Test func aDeliveryEndsTheFailureStreak() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.statistics.consecutiveBackendFailures == 1 }
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        let delivered = await harness.status.waitFor { $0.delivered == 1 }
        #expect(delivered.statistics.consecutiveBackendFailures == 0)
        #expect(delivered.statistics.deferred == 1, "a counter never goes back")
    }

    @Test func aRefusalCountsAsHeldAndEndsTheFailureStreak() async throws {
        let transport = ScriptedTransport()
        transport.script("a", [.status(503), .status(422)])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await harness.status.waitFor { $0.statistics.consecutiveBackendFailures == 1 }
        await harness.clock.waitForSleeper(until: harness.clock.now + .seconds(2))
        harness.clock.advance(by: .seconds(2))
        let held = await harness.status.waitFor { $0.held == 1 }
        #expect(held.statistics.held == 1)
        #expect(held.statistics.consecutiveBackendFailures == 0)
    }

    @Test func dropsIntakeRejectedAreCountedAndRejectedHoldsWhatIntakeListed() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        await engine.noteRejected(count: 2)
        var status = await engine.currentStatus
        #expect(status.statistics.rejected == 2)
        #expect(status.rejected == 0, "the gauge is rejected/'s listing, not a sum")
        await engine.noteRejectedCount(5)
        status = await engine.currentStatus
        #expect(status.rejected == 5 && status.statistics.rejected == 2)
    }

    @Test func anEmptyQueueHasNoOldestArrival() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        #expect(await engine.currentStatus.oldestQueuedAt == nil)
    }

    @Test func theOldestQueuedTimeIsTheEarliestArrivalStillQueued() async throws {
        let transport = ScriptedTransport(default: .status(503))
        transport.script("a", [.hang])
        let harness = try EngineHarness(transport: transport)
        let engine = try await harness.startedEngine()
        let first = try harness.envelope("a", version: 1)
        await engine.offer([first])
        await transport.waitForRequests(1)
        harness.clock.advance(by: .seconds(1))
        let second = try harness.envelope("b", version: 1)
        await engine.offer([second])
        let both = await harness.status.waitFor { $0.statistics.deferred == 1 }
        #expect(both.oldestQueuedAt == first.receivedAt)
        transport.releaseHeld(with: .status(200))
        let afterDelivery = await harness.status.waitFor { $0.delivered == 1 }
        #expect(afterDelivery.oldestQueuedAt == second.receivedAt)
        #expect(second.receivedAt == first.receivedAt + 1000)
    }

    @Test func whileAttemptsAreInFlightAnEndedOnesStatusWaitsItsIntervalAndTheLastIsPublishedAtOnce() async throws {
        let transport = ScriptedTransport(default: .status(200))
        transport.script("a", [.hang])
        let harness = try EngineHarness(settings: DeliveryEngine.Settings(stopGrace: .seconds(5),
                                                                          statusInterval: .milliseconds(100)),
                                        transport: transport)
        let engine = try await harness.startedEngine()
        await engine.offer([try harness.envelope("a", version: 1)])
        await transport.waitForRequests(1)
        let offeredAt = harness.clock.now
        await engine.offer([try harness.envelope("b", version: 1)])
        // b's attempt ended within 100 ms of the offer's publication, with a
        // still in flight: its status is due at the interval's end, not now.
        await harness.clock.waitForSleeper(until: offeredAt + .milliseconds(100))
        #expect(harness.status.latest?.delivered == 0)
        #expect(harness.status.latest?.queued == 2)
        harness.clock.advance(by: .milliseconds(100))
        let afterB = await harness.status.waitFor { $0.delivered == 1 }
        #expect(afterB.queued == 1)
        #expect(afterB.delivering == 1)
        // The last attempt in flight ends: published at once, the clock unmoved.
        transport.releaseHeld(with: .status(200))
        let afterA = await harness.status.waitFor { $0.delivered == 2 }
        #expect(afterA.queued == 0)
        #expect(afterA.delivering == 0)
    }
}
