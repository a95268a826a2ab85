// LookupRun: `txrecon lookup`: a customer writes in with the order id from
// Apple's receipt email (or support has a transaction id); Apple's answer
// (Look Up Order ID, Get Transaction Info), every transaction verified as
// the daemon verifies it, printed with what each destination confirmed
// (the ledger) and whether that is what Apple says now. With `deliver`,
// each transaction the destinations lack or hold an older content of is
// dropped into the spool (format 1) for the daemon to deliver.
//
// Prints to standard output, one block per transaction; problems go to the
// log (standard error). Exit status: 0 answered; 1 an order or transaction
// Apple does not know, or an answer that did not verify (never printed as
// data, never spooled); 75 Apple or the network kept failing; 78 a
// configuration problem (HTTP 401 included). Runs on its own thread.

package enum LookupRun {
    /// What to look up.
    package enum Target: Sendable, Equatable {
        /// The order id from the customer's receipt email (e.g. MQ8B2K1ZX2).
        case order(String)
        case transaction(String)
    }

    /// `app`: the one app to ask; nil asks each app in turn until one
    /// answers (an order or a transaction is one app's).
    package static func run(configurationPath: String, app: String? = nil, environment: [String: String], target: Target,
                            deliver: Bool) async -> Int32 {
        let log = LogSinks.standard(environment: environment)
        ProcessHardening.apply()
        do {
            return try await DedicatedThread.run(name: "txrecon-lookup") {
                AppRuns.run(configurationPath: configurationPath, only: app, log: log, enough: { $0 == 0 },
                            combined: combined, failed: { stop, log in
                    log.write(LogEntry(.error, "lookup: \(stop.reason)"))
                    return stop.exitStatus
                }) { configuration, log in
                    perform(configuration: configuration, environment: environment, target: target,
                            deliver: deliver, output: { print($0) }, log: log)
                }
            }
        } catch {
            log.write(LogEntry(.error, "lookup: \(error.description)"))
            return 1
        }
    }

    /// The exit status of a look-up asked of each app in turn: an app that
    /// could not be asked (75) may be the one that knows the order, so it
    /// outranks another's "Apple does not know it" (1): run it again,
    /// rather than tell the customer the order is unknown.
    static func combined(_ statuses: [Int32]) -> Int32 {
        if statuses.contains(0) { return 0 }
        if statuses.contains(ConfigurationError.exitStatus) { return ConfigurationError.exitStatus }
        if statuses.contains(SweepStop.temporaryExitStatus) { return SweepStop.temporaryExitStatus }
        return AppRuns.mostSevere(statuses)
    }

    static func perform(configuration: Configuration, environment: [String: String], target: Target, deliver: Bool,
                        output: (String) -> Void, log: any LogSink) -> Int32 {
        do throws(SweepStop) {
            let session = try AppleAPISession(configuration: configuration, environment: environment,
                                              clock: SystemSweepClock(), log: log)
            let place = session.configuration.sweep.environment.rawValue
            let signedTransactions: [String]
            switch target {
            case .order(let orderID):
                let asked = try session.ask({ session.client.orderLookup(orderID) }, what: "an order look-up answer",
                                            resume: "run the look-up again")
                if case .failed(let why) = asked { throw SweepStop(kind: .failed, reason: why) }
                guard case .answer(let answer) = asked, answer.status == 0 else {
                    log.write(LogEntry(.error, "Apple does not know the order id \(LogText.singleLine(orderID, limit: 80)) "
                        + "(\(place)): check it against the customer's receipt email, and [Sweep] Environment="))
                    return 1
                }
                signedTransactions = answer.signedTransactions
                output("order \(orderID) (\(place)): \(signedTransactions.count) transaction"
                       + (signedTransactions.count == 1 ? "" : "s"))
            case .transaction(let transactionID):
                let asked = try session.ask({ session.client.transactionInfo(transactionID) },
                                            what: "a transaction info answer", resume: "run the look-up again")
                if case .failed(let why) = asked { throw SweepStop(kind: .failed, reason: why) }
                guard case .answer(let signed) = asked else {
                    log.write(LogEntry(.error, "Apple does not know the transaction id "
                        + "\(LogText.singleLine(transactionID, limit: 80)) (\(place))"))
                    return 1
                }
                signedTransactions = [signed]
            }
            var status: Int32 = 0
            for signed in signedTransactions {
                let item: Item
                do {
                    item = try session.judge.verify(Array(signed.utf8))
                } catch {
                    log.write(LogEntry(.error, "lookup: refused a transaction in Apple's answer: \(error); "
                        + "nothing of it is printed or spooled"))
                    status = 1
                    continue
                }
                let (comparison, confirmed) = try session.judge.compare(item)
                for line in describe(item, comparison: comparison, confirmed: confirmed) { output(line) }
                guard deliver else { continue }
                if case .changed = comparison {
                    try session.drop(Array(signed.utf8), resume: "run the look-up again")
                    output("  spooled for delivery")
                }
            }
            return status
        } catch {
            log.write(LogEntry(.error, "lookup: \(error.reason)"))
            return error.exitStatus
        }
    }

    /// One transaction's block: what Apple says, what each destination confirmed.
    static func describe(_ item: Item, comparison: SnapshotComparison, confirmed: [LedgerRecord]) -> [String] {
        let fields = item.fields
        func date(_ milliseconds: Int64?) -> String { milliseconds.map { Timestamp.rfc3339(milliseconds: $0) } ?? "-" }
        var head = "transaction \(item.key.rawValue)  original \(fields.originalTransactionId ?? "-")  "
            + "product \(fields.productId ?? "-")  \(fields.environment ?? "-")"
        if let expires = fields.expiresDate { head += "  expires \(date(expires))" }
        if let revoked = fields.revocationDate { head += "  REVOKED \(date(revoked))" }
        var lines = [head]
        if confirmed.isEmpty {
            lines.append("  confirmed: no destination")
        }
        for record in confirmed {
            lines.append("  confirmed: \(record.destination) version \(record.version) at \(date(record.confirmedAt)) "
                         + "(\(record.confirmation), attempt \(record.attempt))")
        }
        switch comparison {
        case .agrees: lines.append("  Apple now: the same as confirmed")
        case .changed(let why): lines.append("  Apple now: differs (\(why))")
        }
        return lines
    }
}
