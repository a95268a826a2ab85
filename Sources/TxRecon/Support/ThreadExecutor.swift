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
// Besides jobs, the thread runs plain calls (`submit`): a transport hands
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
//
// It is an event loop: it sleeps in epoll_wait(2), woken by an eventfd when
// work is queued while it sleeps, and watches file descriptors for code that
// runs on it (`watch`): libcurl's multi interface keeps the delivery
// connections' sockets there (CurlTransport), so that one thread sends every
// destination's requests, as swift-nio's event loop and sd-event drive
// theirs.
// Reports: nothing; `tick` does the notifying.
import CGlibcExtras
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

    /// What is queued for the thread, and whether it sleeps (then a put
    /// wakes it through `wakeFD`; while it runs, none needs to).
    private struct Queue {
        var work: [Work] = []
        var sleeping = false
        var ended = false
    }

    private let queue = Mutex(Queue())
    /// epoll(7): `wakeFD` and every watched descriptor.
    private let pollFD: Int32
    /// An eventfd(2) written when work is queued for a sleeping thread.
    private let wakeFD: Int32
    /// What runs when a watched descriptor is ready, by descriptor. Used on
    /// the thread only; a lock nobody else takes costs next to nothing.
    private let watchers = Mutex<[Int32: @Sendable (UInt32) -> Void]>([:])
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
        pollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard pollFD >= 0, wakeFD >= 0 else {
            let code = errno
            if pollFD >= 0 { close(pollFD) }
            if wakeFD >= 0 { close(wakeFD) }
            throw ThreadStartError(name: name, code: code)
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeFD
        epoll_ctl(pollFD, EPOLL_CTL_ADD, wakeFD, &event)
        try DedicatedThread.start(name: name) { [self] in run() }
    }

    deinit {
        close(pollFD)
        close(wakeFD)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        // The executor lives as long as its user; after `shutdown` nothing
        // more is enqueued but final replies, which may then be dropped.
        put(.job(UnownedJob(job)))
    }

    /// Runs `call` on the thread after the jobs and calls queued so far.
    /// The call runs outside any task, with this executor's actors
    /// isolated (see `checkIsolated`): it may `assumeIsolated` one.
    package func submit(_ call: @escaping @Sendable () -> Void) {
        put(.call(call))
    }

    private func put(_ work: Work) {
        let wakes = queue.withLock { queue -> Bool in
            guard !queue.ended else { return false }
            queue.work.append(work)
            guard queue.sleeping else { return false }
            queue.sleeping = false
            return true
        }
        if wakes {
            var one: UInt64 = 1
            _ = Glibc.write(wakeFD, &one, 8)
        }
    }

    /// Whether the caller runs on the thread.
    package var isCurrent: Bool { pthread_self() == thread.load(ordering: .acquiring) }

    /// Runs `handler` on the thread whenever `fd` is ready for `events`
    /// (EPOLLIN, EPOLLOUT; level-triggered), with the events that are,
    /// until `unwatch`. Watching a descriptor again replaces its events and
    /// handler. Call on the thread only.
    package func watch(_ fd: Int32, events: UInt32, _ handler: @escaping @Sendable (UInt32) -> Void) {
        checkIsolated()
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        let known = watchers.withLock { $0.updateValue(handler, forKey: fd) != nil }
        // A descriptor closed without unwatch left epoll by itself: add it again.
        if epoll_ctl(pollFD, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event) != 0 {
            _ = epoll_ctl(pollFD, known ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event)
        }
    }

    /// Stops watching `fd`. Call on the thread only, before closing it.
    package func unwatch(_ fd: Int32) {
        checkIsolated()
        guard watchers.withLock({ $0.removeValue(forKey: fd) }) != nil else { return }
        var event = epoll_event()
        _ = epoll_ctl(pollFD, EPOLL_CTL_DEL, fd, &event)
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
        precondition(isCurrent, "expected to run on the thread of this ThreadExecutor")
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    package func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Ends the thread once the jobs queued so far have run.
    func shutdown() {
        put(.end)
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
        var batch: [Work] = []
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Self.eventsPerWait)
        defer { events.deallocate() }
        // Timers, the tick and the watched descriptors are looked at when
        // the queue runs dry (the wait is cut to the earliest timer, zero
        // when one is due) and every `jobsPerLook` jobs while it does not:
        // a busy thread reads no clock per job (a Duration's arithmetic is
        // hundreds of instructions), and a timer or a socket waits a few
        // jobs at most.
        var jobsSinceLook = 0
        while true {
            let slept: Bool = queue.withLock { queue in
                if queue.work.isEmpty {
                    queue.sleeping = true
                    return true
                }
                swap(&queue.work, &batch)
                return false
            }
            if slept {
                var wake = timers.withLock { $0.earliest }
                if let tick = nextTick { wake = min(wake ?? tick, tick) }
                poll(events, timeout: wake.map { Self.milliseconds(until: $0, from: clock.now) } ?? -1)
                queue.withLock { $0.sleeping = false }
                jobsSinceLook = Self.jobsPerLook
            }
            for work in batch {
                switch work {
                case let .job(job):
                    job.runSynchronously(isolatedTo: serial, taskExecutor: task)
                case let .call(call):
                    call()
                case .end:
                    queue.withLock { $0.ended = true }
                    return
                }
                jobsSinceLook += 1
                if jobsSinceLook >= Self.jobsPerLook {
                    jobsSinceLook = 0
                    lookAround(clock: clock, nextTick: &nextTick, events: events)
                }
            }
            batch.removeAll(keepingCapacity: true)
            if jobsSinceLook >= Self.jobsPerLook {
                jobsSinceLook = 0
                lookAround(clock: clock, nextTick: &nextTick, events: events)
            }
        }
    }

    /// Runs the due timers, the tick when due, and the handlers of the
    /// watched descriptors that are ready now.
    private func lookAround(clock: SystemClock, nextTick: inout Duration?, events: UnsafeMutablePointer<epoll_event>) {
        if !watchers.withLock({ $0.isEmpty }) { poll(events, timeout: 0) }
        let now = clock.now
        while let due = timers.withLock({ $0.takeDue(now: now) }) { due() }
        if let due = nextTick, let interval = tickInterval, now >= due {
            tick()
            nextTick = clock.now + interval
        }
    }

    /// One epoll_wait of at most `timeout` ms (-1: until something is ready):
    /// empties the eventfd if it was written, and runs the handler of each
    /// ready descriptor.
    private func poll(_ events: UnsafeMutablePointer<epoll_event>, timeout: Int32) {
        let count = epoll_wait(pollFD, events, Int32(Self.eventsPerWait), timeout)
        guard count > 0 else { return }
        for index in 0..<Int(count) {
            let fd = events[index].data.fd, ready = events[index].events
            if fd == wakeFD {
                var value: UInt64 = 0
                _ = Glibc.read(wakeFD, &value, 8)
                continue
            }
            // Looked up per event: an earlier handler may have unwatched it.
            if let handler = watchers.withLock({ $0[fd] }) { handler(ready) }
        }
    }

    /// Whole milliseconds from `now` to `deadline`, rounded up (a timer
    /// never fires early), at least 0.
    private static func milliseconds(until deadline: Duration, from now: Duration) -> Int32 {
        let wait = deadline - now
        guard wait > .zero else { return 0 }
        let (seconds, attoseconds) = wait.components
        let total = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: total)
    }

    private static let eventsPerWait = 64

    /// See `run`: often enough that a socket's answer waits a few jobs at
    /// most, seldom enough that the look costs little per job.
    private static let jobsPerLook = 16

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
