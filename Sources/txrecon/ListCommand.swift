// txrecon list: the items of one directory, oldest first, with why they are there.
import TxRecon

enum ListCommand: Command {
    static let flags = ["--json"]
    static let options = ["--destination"]
    static let summary = "list queued, held, rejected or done items, or the answers for Apple in the outbox"
    static let help = """
        Usage: txrecon list [--config PATH] [--destination NAME] [queue|hold|rejected|done] [--json]
               txrecon list [--config PATH] outbox [--json]

        Lists one directory (default: queue), oldest first: for queued items the
        attempts so far, the next attempt and the last error; for held and rejected
        ones the reason. Keys are printed as given by the producer. With further
        destinations (destinations/), every destination's directory is listed,
        each line after its destination's name, or only NAME's with --destination;
        a destination whose file was removed keeps its items in destinations/NAME/
        until the file is back, and is listed too, as "NAME (not configured)".
        rejected/ is the spool's, shared by all. When the configuration serves several
        apps (apps/), each item's line ends with its app ("app NAME"; "app" in --json).

        "outbox" lists the answers for Apple (outbox/): those waiting for txrecon
        answer (new, queue), those set aside with the reason, those sent (kept 30
        days), each with its transaction, environment and, for consumption
        information, Apple's deadline.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.count <= 1 else { Usage.fail("list: name one directory") }
        let which = arguments.positional.first ?? "queue"
        if which == "outbox" { return listOutbox(arguments) }
        guard let directory = SpoolInspector.Listable(rawValue: which) else {
            Usage.fail("list: '\(which)' is not one of queue, hold, rejected, done")
        }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let everywhere = itemPlaces(configuration, only: nil, command: "list")
        var places = itemPlaces(configuration, only: arguments.value("--destination"), command: "list")
        // rejected/ is the spool's: listed once, without a destination.
        if directory == .rejected { places = [everywhere[0]] }
        let named = everywhere.count > 1 && directory != .rejected
        let apps = configuration.appDirectory
        let severalApps = configuration.apps.count > 1 && directory != .rejected
        var lines: [String] = []
        var objects: [JSONValue] = []
        for place in places {
            let inspector = SpoolInspector(layout: place.layout)
            if let missing = inspector.missingDirectory(reading: [directory]) {
                // [Backend]'s directories are the spool's own: one missing
                // means a spool not set up. Another destination's may not
                // exist yet (added since the daemon started), or any more.
                guard place.name != Destination.primaryName else {
                    printError("txrecon: list: " + Format.missing(missing, in: inspector.layout,
                                                                  configurationPath: configuration.path))
                    return 1
                }
                continue
            }
            do {
                for row in try inspector.list(directory) {
                    // With several apps, each item's app, read from its file.
                    let app = severalApps ? apps.name(forBundleID: inspector.bundleID(ofItemNamed: row.name,
                                                                                      in: directory)) : nil
                    lines.append((named ? placeName(place) + ": " : "") + Format.line(row)
                                 + (app.map { "  app \($0)" } ?? ""))
                    guard case let .object(members) = Format.json(row) else { continue }
                    let destination: [(String, JSONValue)] = named
                        ? [("destination", .string(place.name)), ("configured", .bool(place.configured))] : []
                    objects.append(.object(destination + members + (app.map { [("app", .string($0))] } ?? [])))
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

    private static func listOutbox(_ arguments: Arguments) -> Int32 {
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let outbox = Outbox(spool: configuration.spool.directory)
        let rows: [Outbox.Row]
        do {
            rows = try outbox.rows()
        } catch {
            printError("txrecon: list: \(error); txrecon.service makes the outbox at start")
            return 1
        }
        if arguments.has("--json") {
            printJSON(.array(rows.map(Format.outboxJSON)))
        } else {
            for row in rows { printLine(Format.outboxLine(row)) }
        }
        return 0
    }
}
