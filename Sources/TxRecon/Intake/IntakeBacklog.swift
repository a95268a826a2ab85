// IntakeBacklog: what intake still owes new/, and when to look again.
//
// Three kinds of debt, all kept on the intake thread only:
//   - unsettled files: regular files in new/ modified so recently that their
//     writer may still be writing them in place (no rename); each is looked
//     at again after `settleTime`. A file seen created in new/ (IN_CREATE)
//     has a writer that closes it: it is taken at that close (IN_CLOSE_WRITE),
//     and until then looked at every `settleTime` and taken only once it
//     decodes, however long its writer pauses, unless it has not changed
//     for `inPlaceLimit`.
//   - failed passes: a drop the spool could not take (a full file system, an
//     I/O error) stays in new/; new/ and ctl/ are scanned again after a
//     backoff that doubles from `firstRetry` to `longestRetry`. A failure
//     for lack of space (ENOSPC, EDQUOT) also pauses intake: events are not
//     acted on until a full scan succeeds again.
//   - drops left in new/ because the engine is full (too many keys
//     pending): events are not acted on until the engine, with room again,
//     asks for the scan that reads them.
// Times are monotonic (EngineClock.now), so a wall-clock jump neither
// stalls nor hurries a retry. Touches no files and logs nothing: Intake
// reports the transitions this returns.
import Glibc

/// Intake's pending work; not Sendable on purpose: it lives on the intake thread.
struct IntakeBacklog {
    /// How long after its last modification a file written in place is
    /// left alone by a scan: 5 s, long enough for a writer descheduled on a
    /// busy host (2 s was not, under ThreadSanitizer on two loaded cores). A
    /// writer that renames (the Maildir rule, `txrecon submit`) or closes the
    /// file is taken at once regardless.
    static let settleTime: Duration = .seconds(5)
    /// How long a file seen created in place may go unchanged, not closed
    /// by its writer and not decodable, before it is taken as it stands
    /// (and rejected): a writer that holds a file open for an hour without
    /// writing has most likely hung.
    static let inPlaceLimit: Duration = .seconds(3600)
    /// The first wait before scanning again after a failure: 1 s.
    static let firstRetry: Duration = .seconds(1)
    /// The longest wait between scans while failures persist: 30 s.
    static let longestRetry: Duration = .seconds(30)

    /// What a scan or batch ran into.
    struct Failures {
        /// The first error for lack of space, if any.
        var space: SpoolError?
        /// How many drops or requests failed for any reason.
        var count = 0

        mutating func record(_ error: SpoolError) {
            count += 1
            if space == nil, IntakeBacklog.isLackOfSpace(error) { space = error }
        }
    }

    /// A change of the paused state, for Intake to log and publish.
    enum Transition: Equatable {
        case paused(reason: String)
        case resumed(after: Duration)
    }

    /// Names in new/ to look at again, with when (monotonic).
    private(set) var unsettled: [String: Duration] = [:]
    /// Names among `unsettled` seen created in place, whose writer closes
    /// them when done.
    private var writtenInPlace = Set<String>()
    /// When to scan again after a failure (monotonic); nil when nothing failed.
    private(set) var retryAt: Duration?
    private var retryInterval = IntakeBacklog.firstRetry
    /// Why intake is paused and since when (monotonic); nil while it runs.
    private(set) var paused: (reason: String, since: Duration)?

    var isPaused: Bool { paused != nil }

    /// Whether intake left drops in new/ because the engine was full; a
    /// full scan (which the engine asks for once it has room) clears it.
    var awaitsRoom = false

    /// The earliest moment something is due, or nil when nothing is owed.
    var nextWakeUp: Duration? {
        [retryAt, unsettled.values.min()].compactMap { $0 }.min()
    }

    static func isLackOfSpace(_ error: SpoolError) -> Bool {
        error.code == ENOSPC || error.code == EDQUOT
    }

    /// Looks at `name` again after `settleTime`; `inPlace`: it was seen
    /// created in new/ by a writer that has not closed it yet.
    mutating func deferFile(_ name: String, now: Duration, inPlace: Bool = false) {
        unsettled[name] = now + IntakeBacklog.settleTime
        if inPlace { writtenInPlace.insert(name) }
    }

    /// Whether `name` is to be looked at again already.
    func isDeferred(_ name: String) -> Bool {
        unsettled[name] != nil
    }

    /// Whether `name` was seen created in place and its writer has not
    /// closed it yet (as far as intake knows).
    func isWrittenInPlace(_ name: String) -> Bool {
        !writtenInPlace.isEmpty && writtenInPlace.contains(name)
    }

    /// `name`'s writer closed it (seen while intake took nothing): a scan
    /// judges it as any file it finds, no longer as one still written.
    mutating func writerClosed(_ name: String) {
        if !writtenInPlace.isEmpty { writtenInPlace.remove(name) }
    }

    /// How recently a file must have changed to be left alone when it does
    /// not decode: `inPlaceLimit` for one seen created in place, else
    /// `settleTime`.
    func settleWindow(for name: String) -> Duration {
        isWrittenInPlace(name) ? IntakeBacklog.inPlaceLimit : IntakeBacklog.settleTime
    }

    /// Takes `name` off the backlog: it is being taken (or is gone).
    mutating func forget(_ name: String) {
        // Nearly always both are empty: a drain takes thousands of names a
        // second, and hashing each of them twice for nothing showed.
        if !unsettled.isEmpty { unsettled[name] = nil }
        if !writtenInPlace.isEmpty { writtenInPlace.remove(name) }
    }

    /// Removes and returns the unsettled names due at `now`. Whether each
    /// was written in place is kept until it is taken (`forget`).
    mutating func dueFiles(now: Duration) -> [String] {
        let due = unsettled.filter { $0.value <= now }.map(\.key).sorted()
        for name in due { unsettled[name] = nil }
        return due
    }

    /// Whether the retry scan is due at `now`.
    func isRetryDue(now: Duration) -> Bool {
        retryAt.map { $0 <= now } ?? false
    }

    /// Records the outcome of a batch (`fullScan` false) or of a scan of all
    /// of new/ (`fullScan` true); returns the pause transition it caused.
    mutating func finished(_ failures: Failures, fullScan: Bool, now: Duration) -> Transition? {
        if failures.count > 0 {
            retryAt = now + retryInterval
            retryInterval = min(retryInterval * 2, IntakeBacklog.longestRetry)
            if paused == nil, let space = failures.space {
                let reason = "the spool's file system refused a write (\(space))"
                paused = (reason, now)
                return .paused(reason: reason)
            }
            return nil
        }
        guard fullScan else { return nil }
        retryAt = nil
        retryInterval = IntakeBacklog.firstRetry
        if let since = paused?.since {
            paused = nil
            return .resumed(after: now - since)
        }
        return nil
    }
}
