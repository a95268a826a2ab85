// ThreadExecutor: one dedicated thread that runs Swift jobs in order. The
// delivery engine's actor runs on one, and `txrecon` runs its whole command
// on another (as the preferred task executor), so that the daemon never
// puts a job on Swift's global concurrent executor. Two reasons:
//  - the cooperative pool has two threads on two cores, and the engine's
//    work includes short blocking file-system calls (a rename into queue/,
//    a look into done/) that must not stall it;
//  - on Linux, the first job libdispatch runs on a non-overcommit worker
//    (the pool Swift's global executor uses) starts its workqueue monitor, a
//    one-second timer that never stops: sixty wake-ups a minute in a daemon
//    that should sleep while idle.
//
// Besides jobs, the thread runs plain calls (`submit`): a curl worker hands
// an attempt's result back that way, without a task or a continuation per
// attempt. Such a call runs alone on the thread, so it may take an actor on
// this executor as isolated (`assumeIsolated`, checked by `checkIsolated`).
//
// The thread can also carry a periodic `tick` between jobs: the engine's
// watchdog ping, so a job that never returns (a wedged engine) stops the
// pings and systemd restarts the daemon. While idle the thread sleeps until
// the next tick: one wake-up per tick and none otherwise.
// Reports: nothing; `tick` does the notifying.
import Dispatch
import Glibc
import Synchronization

package final class ThreadExecutor: SerialExecutor, TaskExecutor {
    /// What the thread runs next.
    private enum Work: Sendable {
        case job(UnownedJob)
        /// A plain call, such as a worker handing back an attempt's result.
        case call(@Sendable () -> Void)
        /// The end-of-work marker `shutdown` puts.
        case end
    }

    private let work = HandoffQueue<Work>()
    /// The thread's pthread_t once it runs (0 before).
    private let thread = Atomic<UInt>(0)
    private let tickInterval: Duration?
    private let tick: @Sendable () -> Void

    /// Starts the thread `name`. `tick` runs on it every `tickInterval` (nil: never).
    package init(name: String, tickInterval: Duration? = nil,
         tick: @escaping @Sendable () -> Void = {}) throws(ThreadStartError) {
        self.tickInterval = tickInterval
        self.tick = tick
        try DedicatedThread.start(name: name) { [self] in run() }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        // The executor lives as long as its user; after `shutdown` nothing
        // more is enqueued but final replies, which may then be dropped.
        _ = work.put(.job(UnownedJob(job)))
    }

    /// Runs `call` on the thread after the jobs and calls queued so far.
    /// The call runs outside any task, with this executor's actors
    /// isolated (see `checkIsolated`): it may `assumeIsolated` one.
    package func submit(_ call: @escaping @Sendable () -> Void) {
        _ = work.put(.call(call))
    }

    /// Anything running on the thread runs alone and in order, so it is
    /// isolated to this executor; anything else is not, and stops here.
    package func checkIsolated() {
        precondition(pthread_self() == thread.load(ordering: .acquiring),
                     "expected to run on the thread of this ThreadExecutor")
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    package func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Ends the thread once the jobs queued so far have run.
    func shutdown() {
        _ = work.put(.end)
    }

    private func run() {
        // One thread runs every job in turn, so each job has it to itself:
        // running a task-executor job as isolated to this serial executor is
        // sound, and it lets such a job call an actor on this executor
        // without a hop.
        let serial = asUnownedSerialExecutor(), task = asUnownedTaskExecutor()
        thread.store(pthread_self(), ordering: .releasing)
        let clock = SystemClock()
        var nextTick = tickInterval.map { clock.now + $0 }
        while true {
            switch work.take(timeout: nextTick.map { max(.zero, $0 - clock.now) }) {
            case let .element(.job(job)):
                job.runSynchronously(isolatedTo: serial, taskExecutor: task)
            case let .element(.call(call)):
                call()
            case .element(.end), .closed:
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

extension ThreadExecutor {
    /// Runs async work with this executor preferred and blocks the calling
    /// thread until it is done: for a dedicated thread of blocking work
    /// (intake's) that calls into an actor on this executor. The task starts
    /// here, where its work goes anyway, not on the global executor.
    func runBlocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: self) {
            let value = await work()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
