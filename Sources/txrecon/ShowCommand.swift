// txrecon show: everything about one item key.
import TxRecon

enum ShowCommand: Command {
    static let options = ["--destination"]
    static let summary = "show one item: where it is, its fields, its state"
    static let help = """
        Usage: txrecon show [--config PATH] [--destination NAME] KEY

        Shows where the item KEY is (queue/, hold/ or done/), its decoded fields,
        its delivery state or hold reason, and what each destination confirmed
        for it from the ledger (LedgerFile=), long after done/ forgot it: the
        version, when, on which attempt, how, under which Idempotency-Key. KEY is
        a transactionId, a notificationUUID or an envelope id. Signed strings are
        not printed. The ledger is readable by root and the txrecon user only;
        run as another user, show says so and shows the spool alone. With
        further destinations (destinations/), it is shown for each destination
        that has it, after a `destination:` line and a blank line between two, or
        for NAME's alone; a destination whose file was removed keeps its items in
        destinations/NAME/ and is shown too, as "NAME (not configured)".
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.count == 1, let key = ItemKey(arguments.positional[0]) else {
            Usage.fail("show: name exactly one KEY")
        }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let named = itemPlaces(configuration, only: nil, command: "show").count > 1
        var found = false
        for place in itemPlaces(configuration, only: arguments.value("--destination"), command: "show") {
            let inspector = SpoolInspector(layout: place.layout)
            // show looks for the key in these and takes a missing file as
            // "not here"; [Backend]'s are the spool's own, and one missing
            // means a spool not set up.
            if place.name == Destination.primaryName, let missing = inspector.missingDirectory(reading: [.queue, .hold, .done]) {
                printError("txrecon: show: " + Format.missing(missing, in: inspector.layout, configurationPath: configuration.path))
                return 1
            }
            do {
                guard let report = try inspector.show(key) else { continue }
                if named {
                    // printLine escapes a line break: the blank line between
                    // two destinations is a line of its own.
                    if found { printLine("") }
                    printLine("destination: \(place.name)" + Format.leftoverNote(place))
                }
                for line in Format.report(report, apps: configuration.appDirectory) { printLine(line) }
                found = true
            } catch {
                printError("txrecon: show: \(error)")
                return 1
            }
        }
        do {
            let confirmed = try SQLiteLedger(path: configuration.spool.ledgerFile, access: .readOnly).records(of: key)
                .filter { record in arguments.value("--destination").map { $0 == record.destination } ?? true }
            if !confirmed.isEmpty {
                if found { printLine("") }
                for record in confirmed {
                    printLine("confirmed:  \(record.destination) version \(record.version) at "
                              + "\(WallTime.rfc3339(record.confirmedAt)), "
                              + (record.attempt > 0 ? "attempt \(record.attempt)" : "attempt unknown")
                              + ", \(record.confirmation), Idempotency-Key \(record.idempotencyKey)")
                }
                found = true
            }
        } catch {
            printError("txrecon: show: the ledger is not shown: \(error)" + Format.ledgerHint(error))
        }
        guard found else {
            printError("txrecon: show: no item \(key) in queue/, hold/ or done/, nor in the ledger")
            return 1
        }
        return 0
    }
}
