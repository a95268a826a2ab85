// GroupCommit: how `txrecon receive` makes a body durable in new/ before it
// answers, with concurrent requests sharing the directory's fsync.
//
// Each body is written to tmp/ under a unique name and fsynced, as `txrecon
// submit` does, on its request's own thread (ext4 merges concurrent file
// fsyncs into shared journal commits), then renamed into new/. The rename
// is durable only once new/ itself is fsynced: the requests renamed by then
// wait, one thread fsyncs new/ for all of them, and each is answered. A
// request that arrives during that fsync waits for the next one, which
// starts as soon as the first ends. With group commit off (for the
// benchmark's comparison) each request fsyncs new/ itself.
import Dispatch
import Glibc
import Synchronization

final class GroupCommit: Sendable {
    private final class Waiter: Sendable {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<SpoolError?>(nil)
    }

    let layout: SpoolLayout
    let grouped: Bool
    private let submission: Submission
    /// Renamed into new/ and waiting for its fsync.
    private let waiting = Mutex<[Waiter]>([])
    /// Wakes the syncing thread; it waits on nothing else, so an idle
    /// receiver has no timer.
    private let wake = DispatchSemaphore(value: 0)

    /// `grouped` false fsyncs new/ once per request. Starts the thread
    /// that fsyncs new/ for waiting requests.
    init(layout: SpoolLayout, grouped: Bool = true) throws(ThreadStartError) {
        self.layout = layout
        self.grouped = grouped
        submission = Submission(layout: layout)
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
    func commit(_ bytes: [UInt8]) throws(SpoolError) -> String {
        let name = try submission.place(bytes)
        guard grouped else {
            try SystemCall.syncDirectory(layout.new)
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
            try SystemCall.syncDirectory(layout.new)
        } catch {
            failure = error
        }
        for waiter in batch {
            waiter.outcome.withLock { $0 = failure }
            waiter.done.signal()
        }
    }
}
