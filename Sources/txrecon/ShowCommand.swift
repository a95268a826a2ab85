// txrecon show: everything about one item key.
import TxRecon

enum ShowCommand: Command {
    static let summary = "show one item: where it is, its fields, its state"
    static let help = """
        Usage: txrecon show [--config PATH] KEY

        Shows where the item KEY is (queue/, hold/ or done/), its decoded fields,
        its delivery state or hold reason. KEY is a transactionId, a
        notificationUUID or an envelope id. Signed strings are not printed.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.count == 1, let key = ItemKey(arguments.positional[0]) else {
            Usage.fail("show: name exactly one KEY")
        }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let inspector = SpoolInspector(layout: SpoolLayout(root: configuration.spool.directory))
        // show looks for the key in these and takes a missing file as "not here".
        if let missing = inspector.missingDirectory(reading: [.queue, .hold, .done]) {
            printError("txrecon: show: " + Format.missing(missing, in: inspector.layout, configurationPath: configuration.path))
            return 1
        }
        do {
            guard let report = try inspector.show(key) else {
                printError("txrecon: show: no item \(key) in queue/, hold/ or done/")
                return 1
            }
            for line in Format.report(report) { printLine(line) }
            return 0
        } catch {
            printError("txrecon: show: \(error)")
            return 1
        }
    }
}
