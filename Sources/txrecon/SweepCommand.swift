// txrecon sweep: page Apple's notification history into the spool, once
// (what txrecon-sweep.timer starts).
import TxRecon

enum SweepCommand: Command {
    static let flags = ["--dry-run"]
    static let options = ["--app"]
    static let summary = "recover notifications from Apple's notification history (once)"
    static let help = """
        Usage: txrecon sweep [--config PATH] [--app NAME] [--dry-run]

        Pages the App Store Server API's notification history ([Sweep] in the
        configuration) and drops every notification not dropped before into the spool
        as {"signedPayload": ...}, for the daemon to verify and deliver: first the
        notifications Apple could not deliver in the last 8 days, then everything
        since the checkpoint (less Overlap=), one Window= at a time. Then exits.

        --app NAME  sweep this app only (main, or apps/NAME.conf); by default every
                    app in turn, each with its own checkpoint and pace.
        --dry-run   list what would be spooled (date, type, notificationUUID, Apple's
                    last send attempt) on standard output; spool and save nothing.

        Writes one log entry per run. Exit status 0 when done, 78 for a configuration
        problem (including HTTP 401 from Apple), 75 when Apple or the network kept
        failing or another sweep is running (the next run resumes), 1 otherwise.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else { Usage.fail("sweep: unexpected argument '\(arguments.positional[0])'") }
        return await SweepRun.run(configurationPath: arguments.configurationPath, app: arguments.value("--app"),
                                  environment: ProcessEnvironment.current, dryRun: arguments.has("--dry-run"))
    }
}
