// A thread of our own for Swift jobs: actor jobs run there, in order, and so
// does the nonisolated code of a task that prefers it. (That its
// watchdog ticks stop when the engine is wedged is shown with the real
// daemon in DaemonIntegrationTests.)
import Glibc
import Synchronization
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

    @Test func timersFireOnTheThreadInDeadlineOrderNotBeforeTheirDeadlineAndACancelledOneNever() async throws {
        let executor = try ThreadExecutor(name: "txr-test-timer")
        defer { executor.shutdown() }
        let counter = Counter(executor: executor)
        let clock = SystemClock()
        let start = clock.now
        let firedAt = Mutex<[Int: Duration]>([:])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Set from this thread (not the executor's): each earliest one
            // must wake the thread, which was waiting without a deadline.
            let deadlines = [3: start + .milliseconds(30), 1: start + .milliseconds(10), 2: start + .milliseconds(20)]
            for (value, deadline) in deadlines.sorted(by: { $0.key > $1.key }) {
                _ = executor.schedule(at: deadline) {
                    firedAt.withLock { $0[value] = clock.now }
                    counter.assumeIsolated { $0.append(value) }
                    if value == 3 { done.resume() }
                }
            }
            let cancelled = executor.schedule(at: start + .milliseconds(15)) {
                counter.assumeIsolated { $0.append(99) }
            }
            cancelled.cancel()
        }
        #expect(await counter.values == [1, 2, 3])
        #expect(await counter.thread == "txr-test-timer")
        let fired = firedAt.withLock { $0 }
        #expect(fired[1]! >= start + .milliseconds(10))
        #expect(fired[2]! >= start + .milliseconds(20))
        #expect(fired[3]! >= start + .milliseconds(30))
    }

    @Test func aTimerCancelledOnTheThreadBeforeItsDeadlineNeverRunsAndTheNextStillDoes() async throws {
        let executor = try ThreadExecutor(name: "txr-test-cancel")
        defer { executor.shutdown() }
        let counter = Counter(executor: executor)
        let clock = SystemClock()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            executor.submit {
                let first = executor.schedule(at: clock.now) { counter.assumeIsolated { $0.append(1) } }
                _ = executor.schedule(at: clock.now + .milliseconds(5)) {
                    counter.assumeIsolated { $0.append(2) }
                    done.resume()
                }
                // Due already, but the thread runs timers only between calls.
                first.cancel()
            }
        }
        #expect(await counter.values == [2])
    }

    @Test func aDueTimerFiresWhileTheQueueNeverRunsDry() async throws {
        let executor = try ThreadExecutor(name: "txr-test-busy")
        defer { executor.shutdown() }
        let clock = SystemClock()
        let fired = Atomic<Bool>(false)
        let callsBeforeFiring = Atomic<Int>(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            executor.submit {
                _ = executor.schedule(at: clock.now) { fired.store(true, ordering: .relaxed) }
                // Each call puts the next before it returns: the queue is
                // never empty until the timer has fired.
                @Sendable func busy() {
                    if fired.load(ordering: .relaxed) { return done.resume() }
                    callsBeforeFiring.add(1, ordering: .relaxed)
                    executor.submit(busy)
                }
                executor.submit(busy)
            }
        }
        let calls = callsBeforeFiring.load(ordering: .relaxed)
        #expect(calls <= 64)
    }

    /// What a watched pipe's handler saw: the thread it ran on, per pipe.
    final class PipeWatch: Sendable {
        let seen = Mutex<[(pipe: String, thread: String)]>([])
        let waiting = Mutex<(count: Int, continuation: CheckedContinuation<Void, Never>)?>(nil)

        /// Records a call; resumes the wait once `count` calls were seen.
        func note(_ pipe: String) {
            let resumed = seen.withLock { seen -> Int in
                seen.append((pipe, ThreadExecutorTests.currentThreadName()))
                return seen.count
            }
            let continuation = waiting.withLock { waiting -> CheckedContinuation<Void, Never>? in
                guard let (count, continuation) = waiting, resumed >= count else { return nil }
                waiting = nil
                return continuation
            }
            continuation?.resume()
        }

        func wait(forCalls count: Int, after start: () -> Void) async {
            await withCheckedContinuation { continuation in
                waiting.withLock { $0 = (count, continuation) }
                start()
            }
        }
    }

    /// A descriptor watched on the thread has its handler run there when it
    /// is ready, while the thread sleeps in its epoll_wait, and no more once
    /// unwatched: the unwatched pipe is written before the watched one, so
    /// it is ready at the same wait that wakes the thread for the other.
    @Test func aWatchedDescriptorsHandlerRunsOnTheThreadUntilItIsUnwatched() async throws {
        let executor = try ThreadExecutor(name: "txr-test-watch")
        defer { executor.shutdown() }
        var first: [Int32] = [0, 0], second: [Int32] = [0, 0]
        #expect(pipe(&first) == 0 && pipe(&second) == 0)
        defer { for fd in first + second { close(fd) } }
        let (firstRead, firstWrite, secondRead, secondWrite) = (first[0], first[1], second[0], second[1])
        let watch = PipeWatch()
        let epollIn: UInt32 = 0x001
        @Sendable func drain(_ fd: Int32) {
            var byte: UInt8 = 0
            _ = read(fd, &byte, 1)
        }
        await watch.wait(forCalls: 1) {
            executor.submit {
                executor.watch(firstRead, events: epollIn) { _ in drain(firstRead); watch.note("first") }
                executor.watch(secondRead, events: epollIn) { _ in drain(secondRead); watch.note("second") }
            }
            executor.submit { _ = write(firstWrite, "x", 1) }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            executor.submit {
                executor.unwatch(firstRead)
                done.resume()
            }
        }
        await watch.wait(forCalls: 2) {
            _ = write(firstWrite, "y", 1)
            _ = write(secondWrite, "z", 1)
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in executor.submit { done.resume() } }
        let seen = watch.seen.withLock { $0 }
        #expect(seen.map(\.pipe) == ["first", "second"])
        #expect(seen.allSatisfy { $0.thread == "txr-test-watch" })
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
