// txrecon lookup: what Apple says of a customer's order or a transaction,
// beside what each destination confirmed.
import TxRecon

enum LookupCommand: Command {
    static let flags = ["--deliver"]
    static let options = ["--app", "--transaction-id"]
    static let summary = "look up an order id or a transaction with Apple, with what the backend confirmed"
    static let help = """
        Usage: txrecon lookup [--config PATH] [--app NAME] [--deliver] ORDER_ID
               txrecon lookup [--config PATH] [--deliver] --transaction-id ID

        Asks the App Store Server API (the settings of [Sweep]) for the transactions of
        the order id on a customer's App Store receipt email (Look Up Order ID), or for
        one transaction (Get Transaction Info), verifies each as the daemon does, and
        prints it with what each destination confirmed (from the ledger) and whether
        Apple's answer now differs from that.

        --app NAME  ask this app only; by default each app in turn until one knows the
                    order or transaction.
        --deliver   drop each transaction the destinations lack, or hold another
                    content of, into the spool for the daemon to deliver.

        Exit status 0 when answered, 1 when Apple does not know the order or the
        transaction or an answer did not verify, 75 when Apple or the network kept
        failing, 78 for a configuration problem (including HTTP 401 from Apple).
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        let target: LookupRun.Target
        if let transaction = arguments.value("--transaction-id") {
            guard arguments.positional.isEmpty else {
                Usage.fail("lookup: give an order id or --transaction-id, not both")
            }
            target = .transaction(transaction)
        } else {
            guard arguments.positional.count == 1 else { Usage.fail("lookup: give one order id (or --transaction-id ID)") }
            target = .order(arguments.positional[0])
        }
        return await LookupRun.run(configurationPath: arguments.configurationPath, app: arguments.value("--app"),
                                   environment: ProcessEnvironment.current, target: target,
                                   deliver: arguments.has("--deliver"))
    }
}
