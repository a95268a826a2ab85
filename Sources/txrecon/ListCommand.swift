// txrecon list: the items of one directory, oldest first, with why they are there.
import TxRecon

enum ListCommand: Command {
    static let flags = ["--json"]
    static let options = ["--destination"]
    static let summary = "list queued, held, rejected or done items"
    static let help = """
        Usage: txrecon list [--config PATH] [--destination NAME] [queue|hold|rejected|done] [--json]

        Lists one directory (default: queue), oldest first: for queued items the
        attempts so far, the next attempt and the last error; for held and rejected
        ones the reason. Keys are printed as given by the producer. With further
        destinations (destinations/), every destination's directory is listed,
        each line after its destination's name, or only NAME's with --destination;
        rejected/ is the spool's, shared by all.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.count <= 1 else { Usage.fail("list: name one directory") }
        let which = arguments.positional.first ?? "queue"
        guard let directory = SpoolInspector.Listable(rawValue: which) else {
            Usage.fail("list: '\(which)' is not one of queue, hold, rejected, done")
        }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        var targets = destinationLayouts(configuration, only: arguments.value("--destination"), command: "list")
        if directory == .rejected { targets = [targets[0]] }
        let named = !configuration.destinations.isEmpty && directory != .rejected
        var lines: [String] = []
        var objects: [JSONValue] = []
        for (name, layout) in targets {
            let inspector = SpoolInspector(layout: layout)
            if let missing = inspector.missingDirectory(reading: [directory]) {
                printError("txrecon: list: " + Format.missing(missing, in: inspector.layout, configurationPath: configuration.path))
                return 1
            }
            do {
                for row in try inspector.list(directory) {
                    lines.append((named ? name + ": " : "") + Format.line(row))
                    guard case let .object(members) = Format.json(row) else { continue }
                    objects.append(.object((named ? [("destination", .string(name))] : []) + members))
                }
            } catch {
                printError("txrecon: list: \(error)")
                return 1
            }
        }
        if arguments.has("--json") {
            printJSON(.array(objects))
        } else {
            for line in lines { printLine(line) }
        }
        return 0
    }
}
