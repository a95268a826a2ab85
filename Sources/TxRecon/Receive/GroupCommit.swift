// GroupCommit: how `txrecon receive` makes a body durable in new/ before it
// answers, with concurrent requests sharing the directory's fsync.
//
// Each body is written to tmp/ under a unique name and fsynced, as `txrecon
// submit` does (under the receiver's prefix, TemporaryFile, so that the
// next start removes what a crash left there), on its request's own thread (ext4 merges concurrent file
// fsyncs into shared journal commits), then renamed into new/. The rename
// is durable only once new/ itself is fsynced: the requests renamed by then
// wait, one thread fsyncs new/ for all of them, and each is answered. A
// request that arrives during that fsync waits for the next one, which
// starts as soon as the first ends. With group commit off (for the
// benchmark's comparison) each request fsyncs new/ itself.
//
// Built with -DTXRECON_POWERCUT_ANSWER_BEFORE_FSYNC (`make powercut-control`,
// in .build/powercut-unsafe; never in a shipped binary), a request is
// answered once its body is renamed into new/, with no fsync of the file or
// of new/: the receiver that the power-cut test (Tests/powercut/run.sh) must
// catch losing bodies it answered 200, to show that the test can fail.
import Dispatch
import Glibc
import Synchronization

final class GroupCommit: Sendable {
    private final class Waiter: Sendable {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<SpoolError?>(nil)
    }

    /// fsync(2) of a directory; tests pass one that records and waits.
    typealias DirectorySync = @Sendable (String) throws(SpoolError) -> Void

    let layout: SpoolLayout
    let grouped: Bool
    private let submission: Submission
    private let syncDirectory: DirectorySync
    /// Renamed into new/ and waiting for its fsync.
    private let waiting = Mutex<[Waiter]>([])
    /// Wakes the syncing thread; it waits on nothing else, so an idle
    /// receiver has no timer.
    private let wake = DispatchSemaphore(value: 0)
    /// When each commit under way began, by serial: the watchdog asks how
    /// long the oldest has taken (a disk that stopped answering).
    private let underWay = Mutex<(next: UInt64, began: [UInt64: ContinuousClock.Instant])>((0, [:]))

    /// `grouped` false fsyncs new/ once per request. Starts the thread
    /// that fsyncs new/ for waiting requests.
    init(layout: SpoolLayout, grouped: Bool = true,
         syncDirectory: @escaping DirectorySync = { path throws(SpoolError) in try SystemCall.syncDirectory(path) })
        throws(ThreadStartError) {
        self.layout = layout
        self.grouped = grouped
        self.syncDirectory = syncDirectory
        submission = Submission(layout: layout)
        #if TXRECON_POWERCUT_ANSWER_BEFORE_FSYNC
        let warning = Array("txrecon receive: the power-cut test's variant: answers before fsync (never ship it)\n".utf8)
        _ = warning.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        #endif
        guard grouped else { return }
        try DedicatedThread.start(name: "txrecon-commit") { [self] in
            while true {
                wake.wait()
                syncWaiting()
            }
        }
    }

    /// Writes `bytes` into new/ durably; returns its name there. Blocks the
    /// calling thread (a connection's) until new/ has been fsynced.
    /// `placed` is called with the name once the file is in new/, before
    /// that fsync: a failed fsync of new/ throws, but the file is there (and
    /// the daemon may take it), which the caller may need to count.
    func commit(_ bytes: [UInt8], placed: (String) -> Void = { _ in }) throws(SpoolError) -> String {
        let serial = underWay.withLock { state in
            defer { state.next &+= 1 }
            state.began[state.next] = .now
            return state.next
        }
        defer { _ = underWay.withLock { $0.began.removeValue(forKey: serial) } }
        #if TXRECON_POWERCUT_ANSWER_BEFORE_FSYNC
        // The power-cut test's broken receiver: written and renamed into new/
        // with nothing fsynced, so the answer comes while the body is only in
        // the page cache.
        let name = try submission.place(bytes, as: .received, sync: false)
        placed(name)
        return name
        #else
        let name = try submission.place(bytes, as: .received)
        placed(name)
        guard grouped else {
            try syncDirectory(layout.new)
            return name
        }
        let waiter = Waiter()
        let first = waiting.withLock { waiting in
            waiting.append(waiter)
            return waiting.count == 1
        }
        if first { wake.signal() }
        waiter.done.wait()
        if let error = waiter.outcome.withLock({ $0 }) { throw error }
        return name
        #endif
    }

    /// How long the oldest commit under way has been going at `now`; nil
    /// when none is.
    func longestUnderWay(at now: ContinuousClock.Instant = .now) -> Duration? {
        underWay.withLock { state in state.began.values.min().map { now - $0 } }
    }

    /// One fsync of new/ for every request renamed before it began.
    private func syncWaiting() {
        let batch = waiting.withLock { waiting -> [Waiter] in
            defer { waiting.removeAll() }
            return waiting
        }
        guard !batch.isEmpty else { return }
        var failure: SpoolError?
        do throws(SpoolError) {
            try syncDirectory(layout.new)
        } catch {
            failure = error
        }
        for waiter in batch {
            waiter.outcome.withLock { $0 = failure }
            waiter.done.signal()
        }
    }
}
