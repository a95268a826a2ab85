// A thread of our own for Swift jobs: actor jobs run there, in order, and so
// does the nonisolated code of a task that prefers it. (That its
// watchdog ticks stop when the engine is wedged is shown with the real
// daemon in DaemonIntegrationTests.)
import Glibc
import Testing
@testable import TxRecon

@Suite(.timeLimit(.minutes(1)))
struct ThreadExecutorTests {
    actor Counter {
        nonisolated let executor: ThreadExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        private(set) var values: [Int] = []
        private(set) var thread: String = ""

        init(executor: ThreadExecutor) { self.executor = executor }

        func append(_ value: Int) {
            values.append(value)
            let name = (try? SystemCall.readFile("/proc/thread-self/comm", limit: 64)) ?? []
            thread = String(decoding: name.prefix { $0 != 10 }, as: UTF8.self)
        }
    }

    @Test func actorJobsRunInOrderOnTheEngineThread() async throws {
        let executor = try ThreadExecutor(name: "txr-test-order")
        defer { executor.shutdown() }
        let counter = Counter(executor: executor)
        for value in 1...100 { await counter.append(value) }
        #expect(await counter.values == Array(1...100))
        #expect(await counter.thread == "txr-test-order")
    }

    static func currentThreadName() -> String {
        let name = (try? SystemCall.readFile("/proc/thread-self/comm", limit: 64)) ?? []
        return String(decoding: name.prefix { $0 != 10 }, as: UTF8.self)
    }

    nonisolated static func nameAfterSuspending() async -> String {
        await Task.yield()
        return currentThreadName()
    }

    @Test func aTaskPreferringTheExecutorRunsItsNonisolatedCodeOnItsThread() async throws {
        let executor = try ThreadExecutor(name: "txr-test-task")
        defer { executor.shutdown() }
        let names = await Task(executorPreference: executor) {
            [Self.currentThreadName(), await Self.nameAfterSuspending()]
        }.value
        #expect(names == ["txr-test-task", "txr-test-task"])
    }

    @Test func aSubmittedCallRunsOnTheThreadInTurnAndHasItsActorIsolated() async throws {
        let executor = try ThreadExecutor(name: "txr-test-call")
        defer { executor.shutdown() }
        let counter = Counter(executor: executor)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for value in 1...50 {
                executor.submit {
                    counter.assumeIsolated { $0.append(value) }
                    if value == 50 { done.resume() }
                }
            }
        }
        await counter.append(51)
        #expect(await counter.values == Array(1...51))
        #expect(await counter.thread == "txr-test-call")
    }

    /// Off the executor's thread, taking its actor as isolated must stop
    /// the process rather than race with the thread.
    @Test func assumingItsActorIsolatedOnAnotherThreadStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            ThreadExecutorTests.assumeIsolatedOffTheThread()
        }
    }

    static func assumeIsolatedOffTheThread() {
        guard let executor = try? ThreadExecutor(name: "txr-test-off") else { return }
        Counter(executor: executor).assumeIsolated { $0.append(1) }
    }
}
