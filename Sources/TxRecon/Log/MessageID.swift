// MessageID: the fixed journal MESSAGE_IDs txrecon logs, one per kind of
// event, so that `journalctl MESSAGE_ID=…` finds every occurrence and the
// journal catalog (systemd/txrecon.catalog) can explain each to the operator.
// The ids were generated once with `systemd-id128 new`; never change or reuse
// one, because catalogs and operators' saved queries depend on them.

/// The 128-bit ids (32 lowercase hex digits) for `LogEntry.messageID`.
package enum MessageID {
    // MARK: Item events (TXRECON_OUTCOME)

    /// A dropped file was decoded into an item and committed to `queue/`
    /// (outcome `accepted`): at once when more than the inbox window wait or
    /// the backend is failing, else when its first attempt, made from new/,
    /// failed. An item delivered at that first attempt never enters queue/:
    /// its `delivered` entry, which names its file, is its only one. At info.
    package static let accepted = "cf243eeb44cb4891b46ff88dc370215d"

    /// The backend acknowledged the item with a 2xx other than 202 and the
    /// item moved to `done/` (outcome `delivered`). Logged at info.
    package static let delivered = "d8207ecd6e8f4a8890ab74589ef41908"

    /// An attempt failed in a way worth retrying (202, 401, 403, 408, 425,
    /// 429, 5xx, connection, timeout, TLS, unreadable answer); the item stays
    /// in `queue/` with its next attempt time (outcome `deferred`). Logged at
    /// info or notice: retries are expected, not warnings.
    package static let deferred = "92e7c22a5ac04a48b0140499caba2a92"

    /// The backend refused the item for good (409, 422, other 4xx) and it
    /// moved to `hold/` with the status and the start of the answer as the
    /// reason (outcome `held`). Logged at warning; needs an operator.
    package static let held = "83f2a2c1cdee42adaa7efbbe3c329a89"

    /// A dropped file could not be read or decoded and moved to `rejected/`
    /// with a `.reason` file beside it (outcome `rejected`). Logged at error;
    /// the producer needs fixing.
    package static let rejected = "fb2933e5deb0410ea94fb6dc281897dc"

    /// A snapshot older than or equal to the pending or last delivered one
    /// for the same key was moved to `done/` without delivery (outcome
    /// `superseded`). Logged at info.
    package static let superseded = "020cbeeb9aff46419094d24bc94c5e16"

    /// An operator released a held item (`txrecon release`): it moved from
    /// `hold/` back to `queue/`, due now. Logged at notice.
    package static let released = "e0372c6c60644882922996fb27883427"

    /// An operator asked for a queued item to be retried now (`txrecon
    /// retry`), cutting its backoff short. Logged at notice.
    package static let retryRequested = "4887b9be9eb4411c90da71f494c6afbb"

    /// An operator asked for a delivered item to be delivered again
    /// (`txrecon replay`): its snapshot in `done/` was copied into
    /// `queue/`, due now, with the same `Idempotency-Key`. Logged at notice.
    package static let replayed = "211ba658137d4c12b417bcd2d7738e2a"

    /// The spool could not finish, hold or read an item under its key for
    /// a reason that will not go away by itself (a directory where its file
    /// belongs, a name the file system refuses): it moved to `rejected/`
    /// with a `.reason` instead of being delivered or retried again and
    /// again (outcome `set-aside`). Logged at error; `requeue-rejected`
    /// takes it again once the cause is fixed.
    package static let setAside = "56626c771c9a4076b28bc5b582249daa"

    // MARK: Daemon lifecycle

    /// The start-up scan finished and `READY=1` was sent; the daemon now
    /// takes drops and delivers. Logged at notice once per start.
    package static let started = "6b3ec1ed3bc14dd7a4d71a74131d70cc"

    /// SIGTERM or SIGINT arrived: intake stopped, in-flight attempts get a
    /// bounded time to finish, `STOPPING=1` was sent. Logged at notice.
    package static let stopping = "8f21c07f69c94800a60bc96fab268305"

    /// SIGHUP re-read the configuration and the new one is in effect. Logged
    /// at notice.
    package static let reloaded = "bace95e764b4433089114c3276f55872"

    /// SIGHUP found the new configuration invalid; the old one stays in
    /// effect. Logged at error with the file, line and key at fault.
    package static let reloadRefused = "4c472720e5094bb7951ce7e809af1339"

    // MARK: Backend and intake health

    /// The backend started failing (first failure after a success or after
    /// start); further failures are not logged again under this id until it
    /// recovers. Logged at warning.
    package static let backendFailing = "3ef7e0782fa44880966c11650abcf5c5"

    /// The backend answered with success again after `backendFailing`.
    /// Logged at notice.
    package static let backendRecovered = "28e309d2f782426c89e9430a64f81014"

    /// Intake stopped taking new drops because the spool cannot be written
    /// (for example ENOSPC or EDQUOT); files wait in `new/`. Logged at error.
    package static let intakePaused = "1c3134a715f145d6a54714532ddffe36"

    /// Intake takes drops again after `intakePaused`. Logged at notice.
    package static let intakeResumed = "22bac95512584903ba7bdd7511f97efa"

    /// A verified notification carried a notificationType, a container or
    /// a signed member this release does not know (Apple added it since):
    /// delivered as Apple signed it, its signed members verified. Once per
    /// name and process (TXRECON_UNKNOWN: what and the name), at warning;
    /// counted every time in txrecon_apple_unknown_names_total.
    package static let unknownAppleName = "7ce0348a0997415291cfa7326c49b509"

    // MARK: History sweep

    /// A run of `txrecon sweep` ended: completed, or stopped with the reason
    /// (configuration, temporary, failed). One per run, with the pages read,
    /// the notifications found and newly spooled, the checkpoint and its lag,
    /// and the range Apple no longer keeps when the run had to skip one.
    /// Logged at info (notice when it spooled something, warning when it
    /// skipped history or stopped for a temporary reason, error otherwise).
    package static let sweepFinished = "1e9ab6bdd3714046a7126854579e5ecc"

    /// A run of `txrecon reconcile` ended: completed, completed with answers
    /// refused (a signature that did not verify), or stopped with the reason.
    /// One per run, with the customers due and checked and what the
    /// subscriptions' checks found. Logged at info (notice when it spooled
    /// something, warning when it stopped for a temporary reason, error when
    /// it refused an answer or failed).
    package static let reconcileFinished = "67d489762b7b41228416723e77ca4e22"

    /// A run of `txrecon import` ended: completed, completed with answers
    /// refused, or stopped with the reason (the next run goes on from its
    /// checkpoint). One per run, with the customers imported, unknown and
    /// refused, and the transactions read, already confirmed and spooled.
    /// Logged at notice (warning when it stopped for a temporary reason,
    /// error when it refused an answer or failed).
    package static let importFinished = "285927adac484d03ac374f0974c35090"

    // MARK: Outbox

    /// The daemon wrote an answer owed to Apple into outbox/new/ (a
    /// backend's consumption information, Finish Transaction for a
    /// purchase every destination confirmed), before the item was finished.
    /// TXRECON_OUTBOX_ENTRY names the file. Logged at info.
    package static let answerQueued = "51c7a6f01ede43a9850bf558ffd24857"

    /// A CONSUMPTION_REQUEST is still not confirmed by the AnswersFrom=
    /// destination ConsumptionDeadlineWarning= after Apple signed it (or was
    /// held): Apple weighs consumption information only within 12 hours.
    /// Once per request and process, at warning; counted in
    /// txrecon_consumption_deadline_warnings_total.
    package static let consumptionDeadline = "1aa3718566ab4a17bdaa2312316ee62b"

    /// `txrecon answer` set an entry aside in outbox/aside/: Apple refused it
    /// for good (HTTP 400, 403, 404, with Apple's answer), the customer did
    /// not consent, or its 12 hours had passed. At error, with the reason.
    package static let answerSetAside = "3f7d21cabfa64c6f84fdeb2bc808232d"

    /// A run of `txrecon answer` ended: entries sent, set aside and left
    /// waiting, or the reason it stopped. At info (warning when entries are
    /// left for the next run, error when it failed).
    package static let answerFinished = "89a9ee062ff8417aa1d13eaa9f6a0cc0"

    // MARK: Receiver

    /// `txrecon receive` refused a request (4xx, 503 with the code in
    /// TXRECON_REASON), cut one at its deadline, or spooled genuine data
    /// this configuration refuses (to be set aside in rejected/). Logged at
    /// warning, at error for 503.
    package static let receiveRefused = "02b92e152e014273905ddb27d51e027e"

    /// Every id above, for checks that each is distinct and has a catalog entry.
    static let all: [String] = [  // internal for testing
        accepted, delivered, deferred, held, rejected, superseded, released, retryRequested, replayed, setAside,
        started, stopping, reloaded, reloadRefused,
        backendFailing, backendRecovered, intakePaused, intakeResumed, unknownAppleName,
        sweepFinished, reconcileFinished, importFinished, answerQueued, consumptionDeadline, answerSetAside,
        answerFinished, receiveRefused,
    ]
}
