// EngineExecutor: the delivery engine's own thread. The engine actor runs
// its jobs here rather than on Swift's cooperative pool (two threads on two
// cores), because its work includes short blocking file-system calls (a
// rename into queue/, a look into done/) that must not stall the pool.
//
// The thread also carries the watchdog: it calls `tick` every `tickInterval`
// between jobs, so the ping comes from the engine's own loop. A job that
// never returns (a wedged engine) stops the pings and systemd restarts the
// daemon. While idle the thread sleeps until the next tick: one wake-up per
// ping and none otherwise.
// Reports: nothing; `tick` does the notifying.
import Glibc

final class EngineExecutor: SerialExecutor {
    /// nil is the end-of-work marker `shutdown` puts.
    private let jobs = HandoffQueue<UnownedJob?>()
    private let tickInterval: Duration?
    private let tick: @Sendable () -> Void

    /// Starts the thread. `tick` runs on it every `tickInterval` (nil: never).
    init(name: String = "txrecon-engine", tickInterval: Duration? = nil,
         tick: @escaping @Sendable () -> Void = {}) throws(ThreadStartError) {
        self.tickInterval = tickInterval
        self.tick = tick
        try DedicatedThread.start(name: name) { [self] in run() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        // The engine lives as long as the daemon; after `shutdown` nothing
        // more is enqueued but the final replies, which may then be dropped.
        _ = jobs.put(UnownedJob(job))
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Ends the thread once the jobs queued so far have run.
    func shutdown() {
        _ = jobs.put(nil)
    }

    private func run() {
        let executor = asUnownedSerialExecutor()
        let clock = SystemClock()
        var nextTick = tickInterval.map { clock.now + $0 }
        while true {
            switch jobs.take(timeout: nextTick.map { max(.zero, $0 - clock.now) }) {
            case let .element(job?):
                job.runSynchronously(on: executor)
            case .element(nil), .closed:
                return
            case .timedOut:
                break
            }
            if let due = nextTick, let interval = tickInterval, clock.now >= due {
                tick()
                nextTick = clock.now + interval
            }
        }
    }
}
