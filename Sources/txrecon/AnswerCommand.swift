// txrecon answer: send the outbox's answers to Apple, once (what
// txrecon-answer.path and .timer start).
import TxRecon

enum AnswerCommand: Command {
    static let flags: [String] = []
    static let summary = "send the outbox's answers to Apple (consumption information, Finish Transaction), once"
    static let help = """
        Usage: txrecon answer [--config PATH]

        Sends what the daemon wrote into the spool's outbox/ to the App Store Server API
        of each entry's environment, with the In-App Purchase key and settings of
        [Sweep]: Send Consumption Information (a backend's answer to a
        CONSUMPTION_REQUEST) and Finish Transaction (FinishTransactions=yes). Each entry
        Apple took goes to outbox/sent/; one Apple refuses for good (HTTP 400, 403,
        404), one whose 12 hours passed or whose customerConsented is not true goes to
        outbox/aside/ with its reason. Retries with backoff and Apple's Retry-After
        within a budget, then exits.

        Writes one log entry per entry sent or set aside, and one per run. Exit status 0
        when every entry taken was sent or set aside, 75 when entries wait in
        outbox/queue/ for the next run (Apple or the network kept failing) or another
        run is sending, 78 for a configuration problem (including HTTP 401 from Apple and
        entries for an app the configuration does not have), 1 otherwise. One app's
        401 or rate limit keeps only its own entries waiting; the exit status is the
        most severe of the run's stops.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else {
            Usage.fail("answer: unexpected argument '\(arguments.positional[0])'")
        }
        return await AnswerRun.run(configurationPath: arguments.configurationPath,
                                   environment: ProcessEnvironment.current)
    }
}
