// ReconcileRun: `txrecon reconcile` from start to exit status: read the
// configuration and the key, lock the state directory, open the ledger for
// reading and the daemon's verifier, run the `Reconciler`, record the
// result for `txrecon status`, and write the run's one log entry; then,
// once every app has run, the metrics of the whole run (an app that stopped
// at start-up counted too).
//
// Everything runs on one dedicated thread (SQLite, curl, fsync, sleeps),
// never on Swift's cooperative pool. No signal handling, as for the sweep:
// SIGTERM or SIGKILL end the process wherever it is, and the customers not
// marked checked are due again. Exit status: 0 completed, 78 configuration
// (bad settings or key, HTTP 401), 75 temporary (another reconcile runs,
// Apple or the network kept failing), 1 anything else, an answer refused
// included; each with its reason in the log entry. A dry run writes what
// changed to standard output and saves nothing.
import Glibc

package enum ReconcileRun {
    /// Runs one reconcile with the configuration at `configurationPath`;
    /// `all` checks every known subscription whatever the schedule.
    /// `app`: the one app to reconcile; nil for every app in turn.
    package static func run(configurationPath: String, app: String? = nil, environment: [String: String], all: Bool,
                            dryRun: Bool) async -> Int32 {
        let log = LogSinks.standard(environment: environment)
        ProcessHardening.apply()
        do {
            return try await DedicatedThread.run(name: "txrecon-reconcile") {
                // Every app's report, for the one metrics file of the run;
                // the configuration says where it goes.
                var reports: [ReconcileReport] = []
                var metricsConfiguration: Configuration?
                let clock = SystemSweepClock()
                var turns = AppTurns(now: clock.now, apps: AppRuns.count(configurationPath: configurationPath, only: app))
                let status = AppRuns.run(configurationPath: configurationPath, only: app, log: log, failed: { stop, log in
                    var report = ReconcileReport(environment: nil, dryRun: dryRun, all: all,
                                                 startedAt: Timestamp.nowMilliseconds())
                    report.stop = stop
                    log.write(report.logEntry)
                    return report.exitStatus
                }) { configuration, log in
                    let listing: ((String) -> Void)? = dryRun ? { print($0) } : nil
                    let deadline = turns.next(now: clock.now)
                    let report = perform(configuration: configuration, environment: environment, all: all,
                                         listing: listing, clock: clock, deadline: deadline, log: log)
                    log.write(report.logEntry)
                    reports.append(report)
                    metricsConfiguration = configuration
                    return report.exitStatus
                }
                if !dryRun, let metricsConfiguration {
                    MetricsTextFile.write(ReconcileReport.metrics(of: reports), as: "txrecon-reconcile.prom",
                                          configuration: metricsConfiguration, log: log)
                }
                return status
            }
        } catch {
            var report = ReconcileReport(environment: nil, dryRun: dryRun, all: all,
                                         startedAt: Timestamp.nowMilliseconds())
            report.stop = SweepStop(kind: .failed, reason: error.description)
            log.write(report.logEntry)
            return report.exitStatus
        }
    }

    /// One app's run (`configuration` is its settings, AppRuns).
    /// - Parameter clock: the system's; a test's, whose sleeps return at once.
    /// - Parameter deadline: on `clock`, when this app's turn ends (AppTurns).
    static func perform(configuration: Configuration, environment: [String: String], all: Bool,
                        listing: ((String) -> Void)?, clock: any SweepClock = SystemSweepClock(),
                        deadline: Duration? = nil, log: any LogSink) -> ReconcileReport {
        var report = ReconcileReport(environment: nil, dryRun: listing != nil, all: all,
                                     startedAt: clock.wallMilliseconds)
        let session: AppleAPISession
        // A dry run reads the state as it is and writes nothing, not even
        // the lock: run as root, it must leave no file the unit's user cannot open.
        let directory: ReconcileStateDirectory?
        let state: any ReconcileStateStore
        do throws(SweepStop) {
            session = try AppleAPISession(configuration: configuration, environment: environment,
                                          clock: clock, deadline: deadline, log: log)
            report.environment = session.configuration.sweep.environment
            directory = listing == nil ? try ReconcileStateDirectory(layout: session.layout) : nil
            state = directory ?? ReconcileStateSnapshot(layout: session.layout)
        } catch {
            report.stop = error
            return report
        }
        let layout = session.layout
        let gaps = ReconcileGaps.read(layout: layout)
        let reconciler = Reconciler(session: session, state: state, all: all, gaps: gaps, listing: listing,
                                    deadline: deadline)
        report = reconciler.run()
        guard let directory else { return report }
        if report.stop == nil {
            ReconcileGaps.remove(ReconcileGaps.settled(gaps, runStart: report.startedAt, leftDue: report.leftDue),
                                 layout: layout)
        }
        do {
            try directory.saveLastRun(report)
        } catch {
            report.stop = SweepStop.noting("cannot record the result for txrecon status: \(error)", on: report.stop)
        }
        return report
    }
}
