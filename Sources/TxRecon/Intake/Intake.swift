// Intake: takes drops from new/ and requests from ctl/, on its own thread.
//
// For each name in new/: read it without blocking (Spool.readDrop), decode it
// (InputDecoder), verify its App Store signatures (SignedDataVerifier, unless
// Mode=none), and either set it aside in rejected/ with its reason or hand it
// to the engine, which decides between queue/ and done/ (superseded). A
// history page is split into one drop per transaction first, and each is
// verified on its own. Files in queue/ have passed this; the engine only
// decodes them again. Requests in
// ctl/ are executed by the engine; their answers are written beside them.
//
// Everything here blocks (file reads, chain validation, waiting for the
// engine to take a batch), which is why it runs on a dedicated thread and never on Swift's
// cooperative pool. Waiting for the engine is also the back-pressure: a flood
// of drops waits in new/, not in memory.
// Reports: one log entry per rejection; errors reading the spool.
import Dispatch
import Synchronization

final class Intake: Sendable {
    /// What intake needs from the configuration; replaceable on reload.
    struct Settings: Sendable, Equatable {
        var maximumFileSize: Int
        var acceptEnvelopes: Bool
        /// What App Store signed data must satisfy; nil with Mode=none.
        var verification: SignedDataPolicy?
    }

    /// Drops handed to the engine at once: large enough to amortize the hop
    /// to the actor, small enough to keep latency low under a burst.
    static let batchSize = 256

    private let spool: Spool
    private let engine: DeliveryEngine
    private let watcher: InboxWatcher
    private let events: ItemEvents
    private let log: any LogSink
    private let settings: Mutex<Settings>

    init(spool: Spool, engine: DeliveryEngine, watcher: InboxWatcher, settings: Settings, log: any LogSink) {
        self.spool = spool
        self.engine = engine
        self.watcher = watcher
        self.settings = Mutex(settings)
        self.log = log
        self.events = ItemEvents(sink: log)
    }

    func reconfigure(_ settings: Settings) {
        self.settings.withLock { $0 = settings }
    }

    /// Starts the intake thread: it first executes what is waiting in ctl/
    /// and takes everything already in new/, then calls `ready`, then
    /// follows inotify until `stop()`. `lost` is called (once) if new/ or
    /// ctl/ disappears, after which the thread ends.
    func start(ready: @escaping @Sendable () -> Void, lost: @escaping @Sendable (String) -> Void) throws(ThreadStartError) {
        try DedicatedThread.start(name: "txrecon-intake") { [self] in
            let verifiers = VerifierSlot()
            scanControl(verifiers)
            scanInbox(verifiers)
            ready()
            while true {
                for event in watcher.next() {
                    switch event {
                    case let .drops(names): take(names, verifiers)
                    case let .created(names): take(names.filter { !spool.isRegularFileInInbox($0) }, verifiers)
                    case let .controls(names): execute(names, verifiers)
                    case .rescan:
                        scanControl(verifiers)
                        scanInbox(verifiers)
                    case let .lost(directory):
                        return lost(directory)
                    case .stopped:
                        return
                    }
                }
            }
        }
    }

    func stop() { watcher.stop() }

    // MARK: new/

    private func scanInbox(_ verifiers: VerifierSlot) {
        do {
            let (names, unaddressable) = try SystemCall.listDirectoryReportingUnaddressable(spool.layout.new)
            if unaddressable > 0 {
                log.write(LogEntry(.error, "new/ holds \(unaddressable) file(s) whose names are not UTF-8; "
                                   + "txrecon cannot take them: rename them (they are left in place)"))
            }
            take(names, verifiers)
        } catch {
            log.write(LogEntry(.error, "cannot list new/: \(error)"))
        }
    }

    /// Reads, decodes, verifies and hands over `names` in batches.
    private func take(_ names: [String], _ verifiers: VerifierSlot) {
        let settings = self.settings.withLock { $0 }
        let decoder = InputDecoder(acceptEnvelopes: settings.acceptEnvelopes)
        let verifier = verifiers.verifier(for: settings.verification)
        var batch: [Drop] = []
        var rejected = 0
        for name in names {
            for drop in read(name, decoder: decoder, verifier: verifier, settings: settings, rejected: &rejected) {
                batch.append(drop)
            }
            if batch.count >= Intake.batchSize {
                hand(batch, rejected: rejected)
                batch.removeAll(keepingCapacity: true)
                rejected = 0
            }
        }
        if !batch.isEmpty || rejected > 0 { hand(batch, rejected: rejected) }
    }

    /// The drops one file yields: none (gone, rejected), one, or one per
    /// transaction of a history page.
    private func read(_ name: String, decoder: InputDecoder, verifier: SignedDataVerifier?, settings: Settings,
                      rejected: inout Int) -> [Drop] {
        do {
            switch try spool.readDrop(name, maximumSize: settings.maximumFileSize) {
            case .gone:
                return []
            case let .refused(rejection):
                try reject(name, rejection, rejected: &rejected)
                return []
            case let .bytes(bytes, modifiedAt):
                do {
                    switch try decoder.decode(bytes) {
                    case let .item(item):
                        try verifier?.verify(item)
                        return [Drop(name: name, item: item, receivedAt: modifiedAt)]
                    case let .page(transactions):
                        let parts = try spool.split(drop: name, into: transactions)
                        log.write(LogEntry(.info, "new/\(LogText.escaped(name)): history page split into \(parts.count) drops",
                                           fields: [("TXRECON_FILE", name)]))
                        return parts.flatMap {
                            read($0, decoder: decoder, verifier: verifier, settings: settings, rejected: &rejected)
                        }
                    }
                } catch let rejection as Rejection {
                    try reject(name, rejection, rejected: &rejected)
                    return []
                }
            }
        } catch {
            log.write(LogEntry(.error, "new/\(LogText.escaped(name)) not taken: \(error); it stays in new/"))
            return []
        }
    }

    private func reject(_ name: String, _ rejection: Rejection, rejected: inout Int) throws {
        let movedTo = try spool.reject(drop: name, because: rejection, at: Timestamp.nowMilliseconds())
        events.rejected(file: name, rejection: rejection, movedTo: movedTo)
        rejected += 1
    }

    private func hand(_ drops: [Drop], rejected: Int) {
        let engine = self.engine
        waitFor {
            if rejected > 0 { await engine.noteRejected(count: rejected) }
            if !drops.isEmpty { await engine.offer(drops) }
        }
    }

    // MARK: ctl/

    private func scanControl(_ verifiers: VerifierSlot) {
        do {
            execute(try SystemCall.listDirectory(spool.layout.ctl), verifiers)
        } catch {
            log.write(LogEntry(.error, "cannot list ctl/: \(error)"))
        }
    }

    /// Executes requests in ctl/: answer in NAME.result, then NAME removed.
    private func execute(_ names: [String], _ verifiers: VerifierSlot) {
        let directory = spool.layout.ctl
        var requeued = false
        // Requeued files are linked into new/ (no-replace), which inotify
        // reports as IN_CREATE without a close-after-write, so they are taken
        // by a scan once the requests are answered.
        defer { if requeued { scanInbox(verifiers) } }
        for name in names where !name.hasPrefix(".") && !name.hasSuffix(".result") {
            let path = directory + "/" + name
            guard let bytes = try? SystemCall.readFile(path, limit: 1 << 20) else { continue }
            var result = ControlResult()
            if let request = ControlRequest(json: bytes) {
                let engine = self.engine
                result = waitFor { await engine.perform(request) }
                requeued = requeued || (request.command == .requeueRejected && !result.applied.isEmpty)
                log.write(LogEntry(.notice, "operator request \(request.command.rawValue): applied to \(result.applied.count), "
                                   + "skipped \(result.skipped.count)"))
            } else {
                result.skipped.append((name, "not a request this txrecon understands"))
                log.write(LogEntry(.warning, "ctl/\(LogText.escaped(name)) is not a valid request; answered and removed"))
            }
            do {
                try SystemCall.replaceFile(path + ".result", result.json.serialized,
                                           temporaryName: directory + "/.tmp-" + name, sync: false)
                try SystemCall.unlinkIfPresent(path)
            } catch {
                log.write(LogEntry(.error, "cannot answer ctl/\(LogText.escaped(name)): \(error)"))
            }
        }
    }

    /// Runs async work and blocks this (dedicated) thread until it is done.
    private func waitFor<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await work()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}

/// The verifier for the policy in force, rebuilt when a reload changes the
/// policy, so that its chain cache survives from batch to batch. Created on
/// the intake thread and used only there: the verifier is not Sendable.
private final class VerifierSlot {
    private var current: SignedDataVerifier?

    func verifier(for policy: SignedDataPolicy?) -> SignedDataVerifier? {
        guard let policy else {
            current = nil
            return nil
        }
        if current?.policy != policy { current = SignedDataVerifier(policy: policy) }
        return current
    }
}
