// txrecon reconcile: check the subscriptions the ledger knows with Apple,
// once (what txrecon-reconcile.timer starts).
import TxRecon

enum ReconcileCommand: Command {
    static let flags = ["--all", "--dry-run"]
    static let options = ["--app"]
    static let summary = "check known subscriptions with Apple and spool what changed (once)"
    static let help = """
        Usage: txrecon reconcile [--config PATH] [--app NAME] [--all] [--dry-run]

        Asks the App Store Server API (Get All Subscription Statuses; the settings of
        [Sweep]) about the subscriptions the ledger knows that are due: about 1 hour
        and 25 hours after one expired, and every one not expired more than 180 days
        once per FullCycle= ([Reconcile], default 7d). Verifies every answer as the
        daemon does and drops each subscription whose latest transaction or renewal
        info differs from what the destinations confirmed into the spool (as
        {"signedTransactionInfo", "signedRenewalInfo"}), for the daemon to deliver.
        A new signedDate alone is no change. Then exits.

        --app NAME  reconcile this app only; by default every app in turn, each with
                    its own state and pace.
        --all       check every known subscription now, whatever the schedule (an
                    interrupted --all run goes on where it stopped when run again).
        --dry-run   list what changed on standard output; spool and save nothing.

        Writes one log entry per run. Exit status 0 when done, 78 for a configuration
        problem (including HTTP 401 from Apple), 75 when Apple or the network kept
        failing or another reconcile is running (the next run resumes), 1 otherwise,
        including an answer that did not verify (that customer is skipped, nothing of
        it spooled, and the entry names the refusal).
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else {
            Usage.fail("reconcile: unexpected argument '\(arguments.positional[0])'")
        }
        return await ReconcileRun.run(configurationPath: arguments.configurationPath, app: arguments.value("--app"),
                                      environment: ProcessEnvironment.current, all: arguments.has("--all"),
                                      dryRun: arguments.has("--dry-run"))
    }
}
