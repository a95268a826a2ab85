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
        `txrecon receive` when one serves (or served) this spool. The first line counts
        every item the spool holds: with further destinations (destinations/), it adds
        up theirs, and each one's inbox, queue, hold and done follow it, a destination
        whose file was removed among them, marked not configured (its items wait for
        the file). Exit status 0 even when items are held: read the counts.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let inspector = SpoolInspector(layout: SpoolLayout(root: configuration.spool.directory))
        if let missing = inspector.missingDirectory(reading: SpoolInspector.Listable.allCases, inbox: true) {
            printError("txrecon: status: " + Format.missing(missing, in: inspector.layout, configurationPath: configuration.path))
            return 1
        }
        do {
            let places = itemPlaces(configuration, only: nil, command: "status")
            var destinations: [(place: DestinationDirectories.Place, counts: SpoolInspector.DestinationCounts)] = []
            for place in places { destinations.append((place, try SpoolInspector(layout: place.layout).destinationCounts())) }
            let totals = try Self.totals(inspector, destinations.map(\.counts))
            let oldest = destinations.compactMap(\.counts.oldestQueuedAt).min()
            // One destination and nothing left behind: the first line says it all.
            let perDestination = destinations.count > 1 ? destinations : []
            let daemon = inspector.daemonState()
            let now = WallTime.nowMilliseconds
            if arguments.has("--json") {
                var members = totals.map { ($0.0, JSONValue.integer($0.1)) }
                if let oldest { members.append(("oldestQueuedAgeSeconds", .integer((now - oldest) / 1000))) }
                if !perDestination.isEmpty {
                    members.append(("destinations", .array(perDestination.map { place, counts in
                        .object([("name", .string(place.name)), ("configured", .bool(place.configured))]
                                + Self.columns(counts).map { ($0.0, .integer($0.1)) })
                    })))
                }
                members += Format.daemonJSON(daemon)
                let appLayouts = Self.appLayouts(configuration, spool: inspector.layout)
                members.append(("sweep", LastSweep.read(appLayouts[0].layout)?.json ?? .null))
                members.append(("reconcile", LastReconcile.read(appLayouts[0].layout)?.json ?? .null))
                members.append(("apps", .array(configuration.apps.map { app in
                    let layout = inspector.layout.app(app.name)
                    return .object([("name", .string(app.name)), ("bundleId", .string(app.bundleID)),
                                    ("sweep", LastSweep.read(layout)?.json ?? .null),
                                    ("reconcile", LastReconcile.read(layout)?.json ?? .null)])
                })))
                members.append(("receiver", ReceiverStatus.read(inspector.layout).map(Format.receiverJSON) ?? .null))
                let outbox = Outbox(spool: configuration.spool.directory).counts()
                members.append(("outbox", .object([("waiting", .integer(outbox.waiting)), ("sent", .integer(outbox.sent)),
                                                   ("setAside", .integer(outbox.setAside))])))
                printJSON(.object(members))
            } else {
                printLine("spool:    \(configuration.spool.directory)")
                printLine(totals.map { "\($0.0) \($0.1)" }.joined(separator: ", "))
                for (place, counts) in perDestination {
                    printLine("  \(place.name): " + Self.columns(counts).map { "\($0.0) \($0.1)" }.joined(separator: ", ")
                              + Format.leftoverNote(place))
                }
                if let oldest { printLine("oldest queued item: \(Format.age(milliseconds: now - oldest)) old") }
                printLine("daemon:   " + Format.daemon(daemon, now: now))
                printLine("ledger:   " + Format.ledger(daemon, path: configuration.spool.ledgerFile))
                if configuration.apps.count > 1 {
                    printLine("apps:     " + configuration.apps.map { "\($0.name) (\($0.bundleID))" }
                        .joined(separator: ", "))
                }
                for (name, layout) in Self.appLayouts(configuration, spool: inspector.layout) {
                    let of = name.map { " of \($0)" } ?? ""
                    if let sweep = LastSweep.read(layout) { printLine("sweep\(of):    \(Format.sweep(sweep, now: now))") }
                    if let reconcile = LastReconcile.read(layout) {
                        printLine("reconcile\(of): \(Format.reconcile(reconcile, now: now))")
                    }
                    if let number = ImportCheckpoint.unfinished(layout) {
                        printLine("import\(of):   unfinished: goes on with id number \(number) of its input when run again")
                    }
                }
                if let receiver = ReceiverStatus.read(inspector.layout) {
                    printLine("receiver: \(Format.receiver(receiver, now: now))")
                }
                let outbox = Outbox(spool: configuration.spool.directory).counts()
                if outbox != Outbox.Counts() {
                    printLine("outbox:   \(outbox.waiting) waiting for txrecon answer, \(outbox.setAside) set aside, "
                              + "\(outbox.sent) sent (txrecon list outbox)")
                }
            }
            return 0
        } catch {
            printError("txrecon: status: \(error)")
            return 1
        }
    }

    /// The spool's first line: every item it holds, wherever it is. `new`
    /// is new/ and every destination's inbox (neither tried yet); queue,
    /// hold and done add up every destination's, configured or left
    /// behind (an item two destinations hold counts twice, as STATUS
    /// counts it); rejected/ is the spool's.
    private static func totals(_ spool: SpoolInspector,
                               _ destinations: [SpoolInspector.DestinationCounts]) throws(SpoolError) -> [(String, Int)] {
        func sum(_ column: (SpoolInspector.DestinationCounts) -> Int) -> Int { destinations.reduce(0) { $0 + column($1) } }
        return [("new", try spool.inboxCount() + sum(\.inbox)), ("queue", sum(\.queue)), ("hold", sum(\.hold)),
                ("rejected", try spool.list(.rejected).count), ("done", sum(\.done))]
    }

    /// One destination's line: its inbox, queue, hold and done.
    private static func columns(_ counts: SpoolInspector.DestinationCounts) -> [(String, Int)] {
        [("inbox", counts.inbox), ("queue", counts.queue), ("hold", counts.hold), ("done", counts.done)]
    }

    /// Where each app's sweep and reconcile keep their state, named when
    /// there are several apps; the spool's own without apps.
    private static func appLayouts(_ configuration: Configuration,
                                   spool: SpoolLayout) -> [(name: String?, layout: SpoolLayout)] {
        guard !configuration.apps.isEmpty else { return [(nil, spool)] }
        let several = configuration.apps.count > 1
        return configuration.apps.map { (several ? $0.name : nil, spool.app($0.name)) }
    }
}
