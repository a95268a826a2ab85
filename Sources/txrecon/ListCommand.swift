// txrecon list: the items of one directory, oldest first, with why they are there.
import TxRecon

enum ListCommand: Command {
    static let flags = ["--json"]
    static let summary = "list queued, held, rejected or done items"
    static let help = """
        Usage: txrecon list [--config PATH] [queue|hold|rejected|done] [--json]

        Lists one directory (default: queue), oldest first: for queued items the
        attempts so far, the next attempt and the last error; for held and rejected
        ones the reason. Keys are printed as given by the producer.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.count <= 1 else { Usage.fail("list: name one directory") }
        let which = arguments.positional.first ?? "queue"
        guard let directory = SpoolInspector.Listable(rawValue: which) else {
            Usage.fail("list: '\(which)' is not one of queue, hold, rejected, done")
        }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let inspector = SpoolInspector(layout: SpoolLayout(root: configuration.spool.directory))
        if let missing = inspector.missingDirectory(reading: [directory]) {
            printError("txrecon: list: " + Format.missing(missing, in: inspector.layout, configurationPath: configuration.path))
            return 1
        }
        do {
            let rows = try inspector.list(directory)
            if arguments.has("--json") {
                printJSON(.array(rows.map(Format.json)))
            } else {
                for row in rows { printLine(Format.line(row)) }
            }
            return 0
        } catch {
            printError("txrecon: list: \(error)")
            return 1
        }
    }
}
