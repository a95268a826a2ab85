// txrecon history: what reached which destination, from the ledger, long
// after done/ forgot it: a customer's whole history in one command.
import TxRecon

enum HistoryCommand: Command {
    static let flags = ["--json"]
    static let options = ["--original-transaction-id", "--app-account-token", "--app-transaction-id", "--product-id",
                          "--since", "--until", "--destination", "--limit"]
    static let summary = "list what each destination confirmed, from the ledger"
    static let help = """
        Usage: txrecon history [--config PATH] [--original-transaction-id ID] [--app-account-token UUID]
                               [--app-transaction-id ID] [--product-id ID] [--since TIME] [--until TIME]
                               [--destination NAME] [--limit N] [--json]

        Lists what each destination confirmed, oldest first, from the ledger
        (LedgerFile=): for each destination and key, the last version it
        confirmed, when, on which attempt, how, under which Idempotency-Key, and
        the item's kind, notification type, product and expiry. The options
        narrow it down and combine: --original-transaction-id gives one
        subscription's or purchase's whole history, --app-account-token one
        customer's (the UUID the app set at purchase), --app-transaction-id one
        Apple Account's. --since and --until take an RFC 3339 time
        ("2026-12-01T09:30:00Z") or a span ago ("30d"); --limit N (default
        10,000) the most rows. Read while the daemon runs; the ledger is readable
        by root and the txrecon user only (it holds appAccountTokens). Exit 1
        when the ledger cannot be read; nothing found is not an error.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else { Usage.fail("history: takes no KEY; see --help") }
        var query = LedgerQuery(originalTransactionId: arguments.value("--original-transaction-id"),
                                appAccountToken: arguments.value("--app-account-token"),
                                appTransactionId: arguments.value("--app-transaction-id"),
                                productId: arguments.value("--product-id"),
                                destination: arguments.value("--destination"))
        for option in ["--since", "--until"] {
            guard let text = arguments.value(option) else { continue }
            guard let time = OperatorTime.parse(text) else {
                Usage.fail("history: \(option) \"\(text)\" is not \(OperatorTime.acceptedForms)")
            }
            if option == "--since" { query.since = time } else { query.until = time }
        }
        if let since = query.since, let until = query.until, since >= until {
            Usage.fail("history: --since (\(WallTime.rfc3339(since))) is not before --until (\(WallTime.rfc3339(until))): "
                       + "the window holds no time")
        }
        if let text = arguments.value("--limit") {
            guard let limit = Int(text), limit > 0 else { Usage.fail("history: --limit \"\(text)\" is not a positive number") }
            query.limit = limit
        }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let records: [LedgerRecord]
        do {
            records = try SQLiteLedger(path: configuration.spool.ledgerFile, access: .readOnly).history(query)
        } catch {
            printError("txrecon: history: cannot read the ledger: \(error)" + Format.ledgerHint(error))
            return 1
        }
        if arguments.has("--json") {
            printJSON(JSONValue.array(records.map(Format.ledgerJSON)))
            return 0
        }
        if records.isEmpty {
            printError("txrecon: history: no confirmation matches in \(configuration.spool.ledgerFile)")
            return 0
        }
        for record in records { printLine(Format.ledgerRow(record)) }
        if records.count == query.limit {
            printError("txrecon: history: the first \(query.limit) shown; narrow the query or raise --limit")
        }
        return 0
    }
}
