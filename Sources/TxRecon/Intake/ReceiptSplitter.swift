// ReceiptSplitter: the thread that splits verified receipt uploads
// (ReceiptUploads' `split`), so that the thousands of files a customer's
// history makes never hold up intake's other drops. Creating a file is the
// cost here (measured: 5,000 parts took 1.6 s of one thread on an ext4
// without journal, whose inode allocator skips recently freed inodes), and
// intake alone reads new/: split on its thread, every drop dropped
// meanwhile waited for it.
//
// At most `capacity` jobs are queued or running: each holds its receipt,
// the parse and an item per purchase (megabytes for 5,000 purchases), and
// a producer posting the same receipt a hundred times a second must not
// queue every copy. An upload that finds no room stays in new/, and once a
// job ends intake is asked to read new/ again (`rescan`); one whose receipt
// a job queued or running holds already adds nothing (the same bytes make
// the same items, at the same versions) and is said to be a `duplicate`. The parts a job
// renames into new/ are claimed first, so that intake lets their inotify
// events go (`releaseOwnPart`) rather than read back what the job hands the
// engine itself; a name a part did not get after all is unclaimed. A job
// the spool fails keeps its upload aside (Spool+Aside) and is run again
// after a delay that doubles from `firstRetry` to `longestRetry`; its
// errors are kept for intake (`takeFailures`), which pauses on lack of
// space as for any drop. The thread sleeps on its queue while there is
// nothing to split; stopping it abandons what is queued (the uploads are
// aside, put back into new/ and split at the next start).
// Reports nothing itself: the job logs.
import Glibc
import Synchronization

final class ReceiptSplitter: Sendable {
    /// A verified upload to split, set aside, with the settings it was
    /// verified under.
    struct Job: Sendable {
        var upload: AsideDrop
        /// The SHA-256 of `split.der`, its name in receipts/.
        var receiptSha256: String
        var split: ReceiptSplit
        var modifiedAt: Int64
        var settings: Intake.Settings
    }

    /// What one run of a job came to.
    enum Outcome: Sendable, Equatable {
        /// Split, or found to need no part; `leftInInbox`: parts stayed in
        /// new/ without being handed over (refused, or the engine full),
        /// which intake must read.
        case split(leftInInbox: Bool)
        /// The spool failed it; the upload is still aside, and the job runs
        /// again after the delay it was told.
        case failed(SpoolError)
    }

    /// Jobs queued or running at most, by default.
    static let defaultCapacity = 2

    /// What `submit` did.
    enum Submission: Equatable {
        case queued
        /// `capacity` jobs are queued or running: the upload stays in new/.
        case noRoom
        /// A job queued or running splits the same receipt.
        case duplicate
    }

    private struct State {
        var jobs = 0
        /// The receipts of the jobs queued or running.
        var receipts = Set<String>()
        /// An upload found no room: intake reads new/ again once one ends.
        var owesRescan = false
        var failures = IntakeBacklog.Failures()
        var closed = false
    }

    private let capacity: Int
    private let firstRetry: Duration
    private let longestRetry: Duration
    private let queue = HandoffQueue<Job>()
    private let state = Mutex(State())
    /// Parts moved into new/ whose inotify event intake has not seen yet.
    private let ownParts = Mutex<Set<String>>([])

    /// Starts the thread, which runs `work` for each job with the delay
    /// that follows should this run fail and the splitter for its claims;
    /// `rescan` asks intake to read new/ again.
    init(capacity: Int = ReceiptSplitter.defaultCapacity, firstRetry: Duration = IntakeBacklog.firstRetry,
         longestRetry: Duration = IntakeBacklog.longestRetry,
         work: @escaping @Sendable (Job, _ delayIfFailed: Duration, ReceiptSplitter) -> Outcome,
         rescan: @escaping @Sendable () -> Void) throws(ThreadStartError) {
        self.capacity = capacity
        self.firstRetry = firstRetry
        self.longestRetry = longestRetry
        try DedicatedThread.start(name: "txrecon-split") { [self] in
            while let job = queue.take() {
                var failures = 0
                retrying: while true {
                    let delay = retryDelay(afterFailures: failures + 1)
                    switch work(job, delay, self) {
                    case let .split(leftInInbox):
                        if leftInInbox { rescan() }
                        break retrying
                    case let .failed(error):
                        failures += 1
                        state.withLock { $0.failures.record(error) }
                        // Intake pauses for it at the scan this asks for.
                        if IntakeBacklog.isLackOfSpace(error) { rescan() }
                        // A dedicated thread: sleeping holds up nothing else.
                        Self.sleep(delay)
                        if state.withLock({ $0.closed }) { return }
                    }
                }
                let owed = state.withLock { state -> Bool in
                    state.jobs -= 1
                    state.receipts.remove(job.receiptSha256)
                    defer { state.owesRescan = false }
                    return state.owesRescan
                }
                if owed { rescan() }
            }
        }
    }

    /// How long after its `failures`th failure in a row a job runs again:
    /// `firstRetry`, doubling up to `longestRetry`.
    func retryDelay(afterFailures failures: Int) -> Duration {
        var delay = firstRetry
        for _ in 1..<max(1, failures) where delay < longestRetry { delay *= 2 }
        return min(delay, longestRetry)
    }

    /// Queues the job `prepare` makes (setting its upload aside) for the
    /// receipt `receiptSha256`, if there is room and no job has that
    /// receipt already; without room, intake is asked to read new/ again
    /// once a job ends. `prepare` returns nil when there is nothing to
    /// split after all (the upload is gone): `.queued` all the same.
    func submit(receipt receiptSha256: String,
                _ prepare: () throws(SpoolError) -> Job?) throws(SpoolError) -> Submission {
        let submission = state.withLock { state -> Submission in
            guard !state.receipts.contains(receiptSha256) else { return .duplicate }
            guard state.jobs < capacity else {
                state.owesRescan = true
                return .noRoom
            }
            state.jobs += 1
            state.receipts.insert(receiptSha256)
            return .queued
        }
        guard submission == .queued else { return submission }
        let job: Job?
        do {
            job = try prepare()
        } catch {
            release(receiptSha256)
            throw error
        }
        if let job, queue.put(job) == nil { return .queued }
        release(receiptSha256)
        return .queued
    }

    /// A reserved place that no job took after all.
    private func release(_ receiptSha256: String) {
        state.withLock { state in
            state.jobs -= 1
            state.receipts.remove(receiptSha256)
        }
    }

    /// The spool errors of failed jobs since the last call, for intake's
    /// backlog.
    func takeFailures() -> IntakeBacklog.Failures {
        state.withLock { state in
            defer { state.failures = IntakeBacklog.Failures() }
            return state.failures
        }
    }

    /// A part is about to be moved into new/ as `name`.
    func claim(_ name: String) { ownParts.withLock { _ = $0.insert(name) } }

    /// A part did not get `name` after all (a producer's file has it), or
    /// was not handed over: intake takes its event like any other.
    func unclaim(_ name: String) { ownParts.withLock { _ = $0.remove(name) } }

    /// Whether `name`'s event in new/ is of a part a job moved there (and
    /// handed the engine itself); it is then forgotten.
    func releaseOwnPart(_ name: String) -> Bool {
        ownParts.withLock { $0.remove(name) != nil }
    }

    /// inotify lost events (an overflow): the claims whose events will
    /// never come are dropped; a scan reads whatever is in new/ anyway.
    func forgetClaims() { ownParts.withLock { $0.removeAll() } }

    /// Ends the thread once its current run is done; queued jobs are dropped.
    func close() {
        state.withLock { $0.closed = true }
        _ = queue.close()
    }

    private static func sleep(_ duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var delay = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        while nanosleep(&delay, &left) != 0 && errno == EINTR { delay = left }
    }
}
