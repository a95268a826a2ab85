// txrecon import: bring a live app's existing customers in from Apple.
import TxRecon

enum ImportCommand: Command {
    static let flags = ["--dry-run"]
    static let options = ["--app", "--receipts"]
    static let summary = "import existing customers' history from Apple, spooling what the backend lacks"
    static let help = """
        Usage: txrecon import [--config PATH] [--app NAME] [--dry-run] {FILE | - | --receipts DIRECTORY}

        Brings in the customers of a live app: for each id in FILE (or standard input
        for -), one per line (a transaction id, originalTransactionId or
        appTransactionId; blank lines and # comments skipped), or for the
        originalTransactionIds of the StoreKit 1 receipts stored in DIRECTORY (one per
        file, verified as the daemon verifies them), asks the App Store Server API (the
        settings of [Sweep]) for the customer's subscription statuses and whole
        transaction history, verifies every transaction as the daemon does, and drops
        into the spool what the destinations have not confirmed (a subscription's
        latest transaction with its renewal info). A new signedDate alone is no change.
        Checkpointed: the same import run again goes on where it stopped.

        --app NAME  the app whose customers these are: required when the
                    configuration serves several apps.
        --dry-run   list what the destinations lack on standard output; spool and save
                    nothing.

        Writes one log entry per run. Exit status 0 when done, 1 when an answer or a
        receipt was refused (the others were imported) or the input is not ids, 75 when
        Apple or the network kept failing or a reconcile or import is running (run it
        again: it goes on), 78 for a configuration problem (including HTTP 401).
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        let input: ImportRun.Input
        if let directory = arguments.value("--receipts") {
            guard arguments.positional.isEmpty else { Usage.fail("import: give a FILE or --receipts, not both") }
            input = .receipts(directory: directory)
        } else {
            guard arguments.positional.count == 1 else {
                Usage.fail("import: give one FILE of ids (or - for standard input), or --receipts DIRECTORY")
            }
            input = .ids(path: arguments.positional[0])
        }
        return await ImportRun.run(configurationPath: arguments.configurationPath, app: arguments.value("--app"),
                                   environment: ProcessEnvironment.current, input: input,
                                   dryRun: arguments.has("--dry-run"))
    }
}
