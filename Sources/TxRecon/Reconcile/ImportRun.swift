// ImportRun: `txrecon import` from start to exit status: read the input
// (ids one per line from a file or standard input, or a directory of stored
// StoreKit 1 receipts verified offline as intake verifies them, which
// yields their originalTransactionIds), open the session, take the
// reconcile's lock, run the `Importer` and write its one log entry.
//
// An input line that is not an id (digits) refuses the whole input before
// any request, naming the file and line. A receipt that does not verify is
// skipped with its reason (exit 1 at the end); the others' customers are
// imported. Exit status: 0 completed, 1 refused or failed, 75 temporary
// (the same import run again goes on from its checkpoint), 78 configuration.
import Glibc

package enum ImportRun {
    /// Where the customers come from.
    package enum Input: Sendable, Equatable {
        /// A file of ids, one per line, or standard input for "-".
        case ids(path: String)
        /// A directory of stored StoreKit 1 receipts, one per file.
        case receipts(directory: String)
    }

    /// The largest input read: 256 MiB (ten million ids).
    static let inputLimit = 256 << 20

    /// `app`: the app whose customers these are; needed when the
    /// configuration serves several.
    package static func run(configurationPath: String, app: String? = nil, environment: [String: String], input: Input,
                            dryRun: Bool) async -> Int32 {
        let log = LogSinks.standard(environment: environment)
        ProcessHardening.apply()
        do {
            return try await DedicatedThread.run(name: "txrecon-import") {
                AppRuns.run(configurationPath: configurationPath, only: app, log: log,
                            oneAppFor: "whose customers these are", failed: { stop, log in
                    log.write(LogEntry(.error, "import stopped: \(stop.reason)", messageID: MessageID.importFinished,
                                       fields: [("TXRECON_REASON", stop.reason)]))
                    return stop.exitStatus
                }) { configuration, log in
                    let listing: ((String) -> Void)? = dryRun ? { print($0) } : nil
                    return perform(configuration: configuration, environment: environment, input: input,
                                   listing: listing, log: log)
                }
            }
        } catch {
            log.write(LogEntry(.error, "import: \(error.description)"))
            return 1
        }
    }

    /// - Parameter clock: the system's; a test's, whose sleeps return at once.
    static func perform(configuration: Configuration, environment: [String: String], input: Input,
                        listing: ((String) -> Void)?, clock: any SweepClock = SystemSweepClock(),
                        log: any LogSink) -> Int32 {
        let session: AppleAPISession
        let state: ReconcileStateDirectory?
        var customers: [Importer.Customer]
        var receiptsRefused = 0
        do throws(SweepStop) {
            session = try AppleAPISession(configuration: configuration, environment: environment, clock: clock,
                                          log: log)
            switch input {
            case .ids(let path):
                customers = try readIDs(path)
            case .receipts(let directory):
                (customers, receiptsRefused) = try readReceipts(directory, judge: session.judge,
                                                                limit: session.configuration.spool.maxFileSize, log: log)
            }
            // A dry run saves no checkpoint and takes no lock.
            state = listing == nil ? try ReconcileStateDirectory(layout: session.layout) : nil
        } catch {
            var report = ImportReport(dryRun: listing != nil, customers: 0, startedAt: clock.wallMilliseconds)
            report.stop = error
            log.write(report.logEntry)
            return report.exitStatus
        }
        let digest = ImportCheckpoint.digest(of: customers.map(\.id), sweep: session.configuration.sweep)
        let importer = Importer(session: session, state: state, customers: customers, inputDigest: digest,
                                listing: listing, log: log)
        var report = importer.run()
        report.refused += receiptsRefused
        log.write(report.logEntry)
        return report.exitStatus
    }

    /// The customers of a file of ids; blank lines and lines starting with `#` are skipped.
    static func readIDs(_ path: String) throws(SweepStop) -> [Importer.Customer] {
        let bytes: [UInt8]
        do {
            bytes = try FileInput.read(path, limit: inputLimit)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot read the input: \(error)")
        }
        let name = path == "-" ? "standard input" : path
        var customers: [Importer.Customer] = []
        // A spreadsheet's export starts with a byte order mark, which would
        // make the first id "\u{FEFF}7300", refused though it looks right.
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        // Split as bytes: as Characters "\r\n" is one, and a file written on
        // Windows would be one line.
        for (index, raw) in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let line = String(decoding: raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw, as: UTF8.self)
                .trimmingASCIISpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard line.utf8.count <= 64, line.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else {
                throw SweepStop(kind: .failed, reason: "\(name):\(index + 1): \"\(LogText.singleLine(line, limit: 80))\" "
                    + "is not an id (a transaction id, originalTransactionId or appTransactionId: digits); "
                    + "nothing was imported")
            }
            customers.append(Importer.Customer(id: line, source: "\(name):\(index + 1)"))
        }
        return customers
    }

    /// The customers (originalTransactionIds) of the receipts in
    /// `directory`, once each in file-name order, and how many receipts
    /// were refused.
    static func readReceipts(_ directory: String, judge: SnapshotJudge, limit: Int,
                             log: any LogSink) throws(SweepStop) -> ([Importer.Customer], Int) {
        let names: [String]
        do {
            names = try SystemCall.listDirectory(directory).filter { !$0.hasPrefix(".") }.sorted()
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot read the receipts: \(error)")
        }
        var customers: [Importer.Customer] = []
        var seen: Set<String> = []
        var refused = 0
        for name in names {
            let path = directory + "/" + name
            do {
                let bytes = try SystemCall.readFile(path, limit: limit)
                for id in try judge.receiptOriginals(bytes) where seen.insert(id).inserted {
                    customers.append(Importer.Customer(id: id, source: "receipt \(path)"))
                }
            } catch let error as Rejection {
                refused += 1
                log.write(LogEntry(.error, "import: refused the receipt \(path): \(error); its customers are not "
                    + "imported"))
            } catch {
                refused += 1
                log.write(LogEntry(.error, "import: cannot read the receipt \(path): \(error)"))
            }
        }
        return (customers, refused)
    }
}
