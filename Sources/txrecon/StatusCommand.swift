// txrecon status: counts per directory, the oldest queued item, the daemon
// (or, when it does not run, the last status it wrote), the last sweep, the
// receiver's counts.
import TxRecon

enum StatusCommand: Command {
    static let flags = ["--json"]
    static let summary = "show queue counts and the running daemon's state"
    static let help = """
        Usage: txrecon status [--config PATH] [--json]

        Prints how many files are in new/ (not yet tried) and items in queue/, hold/,
        rejected/ and done/, the age of the oldest queued item, the daemon's own status
        line (backend health, next retry) or, when it does not run, the last one it
        wrote and when, the last `txrecon sweep` when there was one, and the counts of
        `txrecon receive` when one serves (or served) this spool. With further
        destinations (destinations/), each one's inbox, queue, hold and done counts follow
        the spool's line, whose queue, hold and done are [Backend]'s. Exit status 0
        even when items are held: read the counts.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let inspector = SpoolInspector(layout: SpoolLayout(root: configuration.spool.directory))
        if let missing = inspector.missingDirectory(reading: SpoolInspector.Listable.allCases, inbox: true) {
            printError("txrecon: status: " + Format.missing(missing, in: inspector.layout, configurationPath: configuration.path))
            return 1
        }
        do {
            let inbox = try inspector.inboxCount()
            let (counts, oldest) = try inspector.counts()
            let daemon = inspector.daemonState()
            let destinations = try configuration.destinations.isEmpty ? [] : destinationCounts(configuration)
            let now = WallTime.nowMilliseconds
            if arguments.has("--json") {
                var members: [(String, JSONValue)] = [("new", .integer(inbox))]
                members += counts.map { ($0.0.rawValue, .integer($0.1)) }
                if let oldest { members.append(("oldestQueuedAgeSeconds", .integer((now - oldest) / 1000))) }
                if !destinations.isEmpty {
                    members.append(("destinations", .array(destinations.map { name, counts in
                        .object([("name", .string(name))] + counts.map { ($0.0, .integer($0.1)) })
                    })))
                }
                members += Format.daemonJSON(daemon)
                members.append(("sweep", LastSweep.read(inspector.layout)?.json ?? .null))
                members.append(("receiver", ReceiverStatus.read(inspector.layout).map(Format.receiverJSON) ?? .null))
                printJSON(.object(members))
            } else {
                printLine("spool:    \(configuration.spool.directory)")
                printLine((["new \(inbox)"] + counts.map { "\($0.0.rawValue) \($0.1)" }).joined(separator: ", "))
                for (name, counts) in destinations {
                    printLine("  \(name): " + counts.map { "\($0.0) \($0.1)" }.joined(separator: ", "))
                }
                if let oldest { printLine("oldest queued item: \(Format.age(milliseconds: now - oldest)) old") }
                printLine("daemon:   " + Format.daemon(daemon, now: now))
                if let sweep = LastSweep.read(inspector.layout) { printLine("sweep:    \(Format.sweep(sweep, now: now))") }
                if let receiver = ReceiverStatus.read(inspector.layout) {
                    printLine("receiver: \(Format.receiver(receiver, now: now))")
                }
            }
            return 0
        } catch {
            printError("txrecon: status: \(error)")
            return 1
        }
    }

    /// Each destination's queue, hold and done counts, printed under the
    /// spool's line (whose queue, hold and done are `[Backend]`'s).
    private static func destinationCounts(_ configuration: Configuration) throws(SpoolError)
        -> [(name: String, counts: [(String, Int)])] {
        var result: [(name: String, counts: [(String, Int)])] = []
        for (name, layout) in destinationLayouts(configuration, only: nil, command: "status") {
            let inspector = SpoolInspector(layout: layout)
            // Its inbox: copies not taken yet (it was full, or they wait
            // for their first attempt).
            let inbox = inspector.missingDirectory(reading: [], inbox: true) == nil ? try inspector.inboxCount() : 0
            var counts: [(String, Int)] = [("inbox", inbox)]
            for directory in [SpoolInspector.Listable.queue, .hold, .done] {
                counts.append((directory.rawValue, try inspector.list(directory).count))
            }
            result.append((name, counts))
        }
        return result
    }
}
