// The daemon keeps its jobs off Swift's global concurrent executor, because
// on Linux the first job libdispatch runs on a non-overcommit worker starts
// a one-second monitor timer that never stops (see ThreadExecutor): the
// idle daemon would wake sixty times a minute. Such a worker is visible as a
// thread named after its root queue ("…default-qos", without "overcommit"),
// and it lives on for five idle seconds after its last job, so looking right
// after each step sees any job that step put on the global executor.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct GlobalExecutorTests {
    /// Names of the process's threads that are non-overcommit dispatch workers.
    static func globalPoolWorkers(of pid: pid_t) -> [String] {
        let tasks = (try? SystemCall.listDirectory("/proc/\(pid)/task")) ?? []
        return tasks.compactMap { task in
            guard let bytes = try? SystemCall.readFile("/proc/\(pid)/task/\(task)/comm", limit: 64) else { return nil }
            let name = String(decoding: bytes.prefix { $0 != 10 }, as: UTF8.self)
            return name.hasSuffix("qos") ? name : nil
        }
    }

    @Test func noStepOfTheDaemonRunsAJobOnTheGlobalExecutor() async throws {
        let failing = Mutex(false)
        let fixture = try DaemonFixture { _ in failing.withLock { $0 } ? .status(503) : .status(200) }
        // A retry an hour away: only `txrecon retry` below brings "second"
        // back (with the default 1 s, a slow run saw the timer deliver it first).
        try fixture.writeConfig("", delays: "1h")
        let daemon = try await fixture.start(environment: ["WATCHDOG_USEC": "200000"])
        #expect(Self.globalPoolWorkers(of: daemon.pid) == [], "after start-up")

        try fixture.drop(fixture.envelope("first", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["first"] })
        #expect(Self.globalPoolWorkers(of: daemon.pid) == [], "after a delivery")

        failing.withLock { $0 = true }
        try fixture.drop(fixture.envelope("second", version: 1))
        #expect(await fixture.eventually { fixture.names("queue").contains("second.state") })
        #expect(Self.globalPoolWorkers(of: daemon.pid) == [], "after a failed attempt")

        failing.withLock { $0 = false }
        let retried = try await fixture.cli(["retry", "second"])
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(await fixture.eventually { fixture.doneItems().contains("second") })
        #expect(Self.globalPoolWorkers(of: daemon.pid) == [], "after a retry through ctl/")

        let before = fixture.notify.messages.count
        daemon.signal(SIGHUP)
        #expect(await fixture.notify.waitFor({ $0.contains("READY=1") }, from: before, timeout: .seconds(10)) != nil)
        #expect(Self.globalPoolWorkers(of: daemon.pid) == [], "after a reload")
    }
}
