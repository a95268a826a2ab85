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
// pings and systemd restarts the daemon. And it keeps its own timers
// (`schedule`): a call run on the thread at a deadline, with no task,
// continuation or libdispatch source per wait, as an event loop keeps them
// (swift-nio's scheduled tasks, sd-event's timer sources). While idle the
// thread sleeps until the next tick or timer: one wake-up each and none
// otherwise.
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
    private let timers = Mutex(Timers())

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

    /// Runs `action` on the thread, as `submit` does, once the monotonic
    /// clock (SystemClock's `now`) reaches `deadline`, unless the returned
    /// timer is cancelled first. Cancelled on the thread before it fired,
    /// it never runs.
    package func schedule(at deadline: Duration, _ action: @escaping @Sendable () -> Void) -> EngineTimer {
        let (id, earliest) = timers.withLock { $0.add(deadline, action) }
        // The thread computes its wait before it sleeps: a timer set from
        // elsewhere that is now the earliest wakes it to wait anew.
        if earliest, pthread_self() != thread.load(ordering: .acquiring) { submit {} }
        return EngineTimer { [self] in timers.withLock { $0.remove(id) } }
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
        // Timers and the tick are looked at when the queue runs dry (its
        // wait is cut to the earliest of them, zero when one is due) and
        // every `jobsPerLook` jobs while it does not: a busy thread reads
        // no clock per job (a Duration's arithmetic is hundreds of
        // instructions), and a timer waits a few jobs at most.
        var jobsSinceLook = 0
        while true {
            let taken = work.take {
                var wake = timers.withLock { $0.earliest }
                if let tick = nextTick { wake = min(wake ?? tick, tick) }
                return wake.map { max(.zero, $0 - clock.now) }
            }
            switch taken {
            case let .element(.job(job)):
                job.runSynchronously(isolatedTo: serial, taskExecutor: task)
            case let .element(.call(call)):
                call()
            case .element(.end), .closed:
                return
            case .timedOut:
                jobsSinceLook = Self.jobsPerLook
            }
            jobsSinceLook += 1
            guard jobsSinceLook >= Self.jobsPerLook else { continue }
            jobsSinceLook = 0
            let now = clock.now
            while let due = timers.withLock({ $0.takeDue(now: now) }) { due() }
            if let due = nextTick, let interval = tickInterval, now >= due {
                tick()
                nextTick = clock.now + interval
            }
        }
    }

    /// See `run`.
    private static let jobsPerLook = 64

    /// The thread's timers, earliest first. An array kept in order rather
    /// than a heap: the engine has a handful at a time (the next start, a
    /// status flush, a stop's grace, intake's wait for room), where an
    /// insertion into a short array costs less than a heap's upkeep.
    private struct Timers {
        private var pending: [(deadline: Duration, id: UInt64, action: @Sendable () -> Void)] = []
        private var nextID: UInt64 = 0

        var earliest: Duration? { pending.first?.deadline }

        /// Adds a timer; returns its id and whether it is now the earliest.
        mutating func add(_ deadline: Duration, _ action: @escaping @Sendable () -> Void) -> (UInt64, Bool) {
            nextID &+= 1
            // After the timers with the same deadline: equal deadlines fire in the order set.
            let index = pending.firstIndex { $0.deadline > deadline } ?? pending.endIndex
            pending.insert((deadline, nextID, action), at: index)
            return (nextID, index == 0)
        }

        mutating func remove(_ id: UInt64) {
            if let index = pending.firstIndex(where: { $0.id == id }) { pending.remove(at: index) }
        }

        /// The earliest timer's action if it is due at `now`, taken out.
        mutating func takeDue(now: Duration) -> (@Sendable () -> Void)? {
            guard let first = pending.first, first.deadline <= now else { return nil }
            return pending.removeFirst().action
        }
    }
}

/// A timer a clock set (EngineClock.schedule); `cancel` stops it from
/// firing if it has not yet, and is harmless after.
package struct EngineTimer: Sendable {
    package let cancel: @Sendable () -> Void

    package init(cancel: @escaping @Sendable () -> Void) {
        self.cancel = cancel
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
