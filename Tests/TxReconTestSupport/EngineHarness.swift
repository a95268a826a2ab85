// EngineHarness: a DeliveryEngine on a temporary spool with a manual clock, a
// scripted transport and recorders, plus builders for drops. One per test.
import Dispatch
import Glibc
import Synchronization
import TxRecon

package final class EngineHarness: Sendable {
    /// One engine thread for every test engine in the process: engines that
    /// tests never stop would otherwise each leave a thread behind.
    static let executor: ThreadExecutor = {
        do {
            return try ThreadExecutor(name: "txrecon-test-engine")
        } catch {
            fatalError("cannot start the test engine thread: \(error)")
        }
    }()

    package let directory: TemporaryDirectory
    package let layout: SpoolLayout
    package let spool: Spool
    package let clock: ManualClock
    package let transport: ScriptedTransport
    package let status = StatusRecorder()
    package let log = RecordingLogSink()
    package let settings: DeliveryEngine.Settings
    /// What writes the answers owed to Apple, when the test has one.
    package let answers: AnswerTaker?

    package init(settings: DeliveryEngine.Settings = DeliveryEngine.Settings(stopGrace: .seconds(5)),
                clock: ManualClock = ManualClock(),
                transport: ScriptedTransport = ScriptedTransport(), directory: TemporaryDirectory? = nil,
                answers: (Outbox) -> AnswerTaker.Settings? = { _ in nil }) throws {
        self.directory = directory ?? TemporaryDirectory("txrecon-engine")
        layout = SpoolLayout(root: self.directory.path + "/spool")
        try layout.createMissingDirectories()
        spool = Spool(layout: layout)
        self.clock = clock
        self.transport = transport
        self.settings = settings
        let outbox = Outbox(spool: layout.root)
        try outbox.prepare()
        self.answers = answers(outbox).map(AnswerTaker.init)
    }

    /// A new engine over this harness's spool (call again to simulate a restart).
    package func makeEngine() -> DeliveryEngine {
        makeEngine(buildDoneIndex: DoneIndex.build(from:))
    }

    /// A new engine whose index of done/ lists done/ when the engine asks
    /// for it but arrives only once `gate` opens: what a slow listing of a
    /// large done/ looks like to the engine.
    package func makeEngine(doneIndexArrivesAfter gate: Gate) -> DeliveryEngine {
        makeEngine(buildDoneIndex: { spool in
            let listed = DoneIndex.listing(spool)
            await gate.wait()
            return listed
        })
    }

    /// A new engine whose listing of done/ fails, as when done/ cannot be read.
    package func makeEngineWhoseDoneListingFails() -> DeliveryEngine {
        makeEngine(buildDoneIndex: { spool in .failure(SpoolError("open", spool.layout.done, EACCES)) })
    }

    private func makeEngine(buildDoneIndex: @escaping DoneIndexBuilder) -> DeliveryEngine {
        let builder = RequestBuilder(softwareVersion: "test", secrets: BackendSecrets())
        let status = self.status
        return DeliveryEngine(
            spool: spool, settings: settings, transport: transport,
            prepare: { item, attempt, receivedAt, now in
                builder.request(for: item, attempt: attempt, receivedAt: receivedAt, signedAt: now / 1000)
            },
            clock: clock, log: log, executor: EngineHarness.executor, buildDoneIndex: buildDoneIndex,
            answers: answers, publish: { status.record($0) })
    }

    /// A new engine, started: restored from the spool and delivering.
    package func startedEngine() async throws -> DeliveryEngine {
        let engine = makeEngine()
        try await engine.start()
        return engine
    }

    /// Starts `operation` in a task that does not prefer the engine's
    /// thread (nor does the daemon's call to `stop`, from its command
    /// thread) and then holds the engine thread: `operation`'s first step
    /// into the engine is queued there, but nothing runs until `release` is
    /// called. What the test sets off meanwhile (an attempt's end, say)
    /// queues up behind it, so the test chooses the order in which the
    /// engine sees things.
    package static func holdingEngineThread<Value: Sendable>(
        startingWith operation: @escaping @Sendable () async -> Value
    ) async -> (task: Task<Value, Never>, release: @Sendable () -> Void) {
        let hold = DispatchSemaphore(value: 0)
        let task = await withCheckedContinuation { (started: CheckedContinuation<Task<Value, Never>, Never>) in
            executor.submit {
                // Runs up to its hop onto the engine thread right here.
                started.resume(returning: Task.immediate { await operation() })
                hold.wait()
            }
        }
        return (task, { hold.signal() })
    }

    /// Waits for `task` to end with the manual clock left where it was,
    /// and tells whether it was: a task waiting on the clock (a timer that
    /// should have been cancelled) would never end, so after `bound` of real
    /// time (a bound on a hang on a busy host, never a timing) the clock is
    /// advanced by `unstick` to end that wait, and false is returned.
    package func endsWithoutTheClock<Value: Sendable>(_ task: Task<Value, Never>, unstick: Duration,
                                                     bound: Duration = .seconds(30)) async -> Bool {
        let start = clock.now
        let ended = Mutex(false)
        let clock = self.clock
        let watchdog = Task {
            try await Task.sleep(for: bound)
            if !ended.withLock({ $0 }) { _ = clock.advance(by: unstick) }
        }
        _ = await task.value
        ended.withLock { $0 = true }
        watchdog.cancel()
        return clock.now == start
    }

    /// Writes an envelope drop into new/ and returns it as intake would hand it over.
    package func envelope(_ id: String, version: Int64, name: String? = nil) throws -> Drop {
        let fileName = name ?? "\(id)-v\(version)-\(UInt32.random(in: 0...UInt32.max))"
        let text = #"{"id":"\#(id)","version":\#(version),"payload":{"n":\#(version)}}"#
        try SystemCall.writeNewFile(layout.new + "/" + fileName, Array(text.utf8), sync: false)
        let item = Item(key: ItemKey(id)!, version: ItemVersion(primary: version), kind: .envelope,
                        payload: .object([("n", .integer(version))]))
        return Drop(name: fileName, item: item, receivedAt: clock.wallMilliseconds)
    }

    package func exists(_ path: String) -> Bool {
        access(layout.root + "/" + path, F_OK) == 0
    }

    package func names(in directory: String) -> [String] {
        ((try? SystemCall.listDirectory(layout.root + "/" + directory)) ?? []).sorted()
    }
}
