// The engine's own thread: actor jobs run there, in order. (That its
// watchdog ticks stop when the engine is wedged is shown with the real
// daemon in DaemonIntegrationTests.)
import Glibc
import Testing
@testable import TxRecon

@Suite(.timeLimit(.minutes(1)))
struct EngineExecutorTests {
    actor Counter {
        nonisolated let executor: EngineExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        private(set) var values: [Int] = []
        private(set) var thread: String = ""

        init(executor: EngineExecutor) { self.executor = executor }

        func append(_ value: Int) {
            values.append(value)
            let name = (try? SystemCall.readFile("/proc/thread-self/comm", limit: 64)) ?? []
            thread = String(decoding: name.prefix { $0 != 10 }, as: UTF8.self)
        }
    }

    @Test func actorJobsRunInOrderOnTheEngineThread() async throws {
        let executor = try EngineExecutor(name: "txr-test-order")
        defer { executor.shutdown() }
        let counter = Counter(executor: executor)
        for value in 1...100 { await counter.append(value) }
        #expect(await counter.values == Array(1...100))
        #expect(await counter.thread == "txr-test-order")
    }
}
