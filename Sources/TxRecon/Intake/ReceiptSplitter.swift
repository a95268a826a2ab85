// ReceiptSplitter: the thread that stores a verified receipt upload's
// receipt and writes its parts (Intake's `split(_:receipt:…)`), so that
// the thousands of files a customer's history makes never hold up intake's
// other drops. Creating a file is the cost here (measured: 5,000 parts took
// 1.6 s of one thread on an ext4 without journal, whose inode allocator
// skips recently freed inodes), and intake alone reads new/: split on its
// thread, every drop dropped meanwhile waited for it.
//
// Intake hands a job over and goes on. While it runs, the upload stays in
// new/ under its name (`isSplitting`: intake does not take it again), and
// the parts it renames into new/ are claimed first (`claim`), so that
// intake lets their inotify events go (`releaseOwnPart`) rather than read
// back what the splitter hands the engine itself. A job that fails leaves
// the upload in new/ and, five seconds later, has intake read new/ again.
// The thread sleeps on its queue while there is nothing to split; stopping
// it abandons what is queued (the uploads are still in new/, split at the
// next start).
// Reports nothing itself: the job logs.
import Glibc
import Synchronization

final class ReceiptSplitter: Sendable {
    /// A verified upload to split, with the settings it was verified under.
    struct Job: Sendable {
        var name: String
        var split: ReceiptSplit
        var modifiedAt: Int64
        var settings: Intake.Settings
    }

    private let jobs = HandoffQueue<Job>()
    /// Uploads queued or being split, by their names in new/.
    private let splitting = Mutex<Set<String>>([])
    /// Parts moved into new/ whose inotify event intake has not seen yet.
    private let ownParts = Mutex<Set<String>>([])

    /// Starts the thread, which runs `work` for each job, with `claim(_:)`
    /// to call for each part's name; `work` returns false when the job
    /// failed and is to be tried again, and `retry` then asks intake to read
    /// new/ again, `retryDelay` (default 5 s) later.
    static let defaultRetryDelay: Duration = .seconds(5)

    init(retryDelay: Duration = ReceiptSplitter.defaultRetryDelay, work: @escaping @Sendable (Job, _ claim: (String) -> Void) -> Bool,
         retry: @escaping @Sendable () -> Void) throws(ThreadStartError) {
        try DedicatedThread.start(name: "txrecon-split") { [self] in
            while let job = jobs.take() {
                let done = work(job, claim)
                if !done {
                    // A dedicated thread: sleeping holds up nothing else.
                    var delay = timespec(tv_sec: Int(retryDelay.components.seconds), tv_nsec: 0)
                    var left = timespec()
                    while nanosleep(&delay, &left) != 0 && errno == EINTR { delay = left }
                }
                splitting.withLock { _ = $0.remove(job.name) }
                if !done { retry() }
            }
        }
    }

    /// Queues `job`; false when its upload is queued or being split already.
    func submit(_ job: Job) -> Bool {
        guard splitting.withLock({ $0.insert(job.name).inserted }) else { return false }
        if jobs.put(job) != nil {
            splitting.withLock { _ = $0.remove(job.name) }
            return false
        }
        return true
    }

    /// Whether the upload `name` in new/ is queued or being split.
    func isSplitting(_ name: String) -> Bool { splitting.withLock { $0.contains(name) } }

    /// The splitter is about to move a part into new/ as `name`.
    func claim(_ name: String) { ownParts.withLock { _ = $0.insert(name) } }

    /// Whether `name`'s event in new/ is of a part the splitter moved there
    /// (and handed the engine itself); it is then forgotten.
    func releaseOwnPart(_ name: String) -> Bool {
        ownParts.withLock { $0.remove(name) != nil }
    }

    /// inotify lost events (an overflow): the claims whose events will
    /// never come are dropped; a scan reads whatever is in new/ anyway.
    func forgetClaims() { ownParts.withLock { $0.removeAll() } }

    /// Ends the thread once its current job is done; queued jobs are dropped.
    func close() {
        _ = jobs.close()
    }
}
