// SweepRun: `txrecon sweep` from start to exit status: read the
// configuration and the key, lock the state directory, run the `Sweeper`,
// record the result for `txrecon status`, and write the run's one log entry.
//
// Everything runs on one dedicated thread (file reads, curl, fsync, sleeps),
// never on Swift's cooperative pool; the caller only awaits the exit status.
// There is no signal handling on purpose: SIGTERM (a stopped unit) ends the
// process wherever it is, which the checkpoint makes harmless. A run asks
// for 55 minutes, shared among the apps (AppTurns), so that it ends by
// itself, with its report, before the unit's TimeoutStartSec=1h would kill
// it without one. Exit status: 0 completed, 78 configuration (bad settings
// or key, HTTP 401), 75 temporary (another sweep runs, Apple or the network
// kept failing, an app's turn of the run spent), 1 anything else; each with
// its reason in the log entry. A dry run writes its list to standard output
// and saves nothing.
import Glibc

/// The `txrecon sweep` command's behaviour.
package enum SweepRun {
    /// Runs one sweep with the configuration at `configurationPath`;
    /// `environment` is the process environment (`CREDENTIALS_DIRECTORY`,
    /// `JOURNAL_STREAM`). Returns the exit status.
    /// `app`: the one app to sweep; nil for every app in turn.
    package static func run(configurationPath: String, app: String? = nil, environment: [String: String], dryRun: Bool) async -> Int32 {
        let log = LogSinks.standard(environment: environment)
        ProcessHardening.apply()
        do {
            return try await DedicatedThread.run(name: "txrecon-sweep") {
                let clock = SystemSweepClock()
                var turns = AppTurns(now: clock.now, apps: AppRuns.count(configurationPath: configurationPath, only: app))
                return AppRuns.run(configurationPath: configurationPath, only: app, log: log, failed: { stop, log in
                    var report = SweepReport(environment: nil, dryRun: dryRun, startedAt: Timestamp.nowMilliseconds())
                    report.stop = stop
                    log.write(report.logEntry)
                    return report.exitStatus
                }) { configuration, log in
                    let listing: ((HistoryNotification) -> Void)? = dryRun ? { print(line(for: $0)) } : nil
                    let report = perform(configuration: configuration, environment: environment, listing: listing,
                                         clock: clock, deadline: turns.next(now: clock.now), log: log)
                    log.write(report.logEntry)
                    return report.exitStatus
                }
            }
        } catch {
            let stop = SweepStop(kind: .failed, reason: error.description)
            var report = SweepReport(environment: nil, dryRun: dryRun, startedAt: Timestamp.nowMilliseconds())
            report.stop = stop
            log.write(report.logEntry)
            return stop.exitStatus
        }
    }

    /// The whole run, blocking; `listing` as for `Sweeper` (nil: a real run).
    /// One app's sweep (`configuration` is its settings, AppRuns).
    /// - Parameter clock: the system's; a test's, whose sleeps return at once.
    /// - Parameter deadline: on `clock`, when this app's turn ends
    ///   (AppTurns): no request starts and no wait is begun past it.
    static func perform(configuration: Configuration, environment: [String: String],
                        listing: ((HistoryNotification) -> Void)?, clock: any SweepClock = SystemSweepClock(),
                        deadline: Duration? = nil, log: any LogSink) -> SweepReport {
        var report = SweepReport(environment: nil, dryRun: listing != nil, startedAt: clock.wallMilliseconds)
        let tokens: APITokenIssuer
        do {
            report.environment = configuration.sweep.environment
            tokens = try SweepCredentials.load(for: configuration, environment: environment)
        } catch {
            report.stop = SweepStop(kind: .configuration, reason: error.description)
            return report
        }
        let settings = configuration.sweep
        for warning in ConfigurationWarnings.sweep(settings) { log.write(LogEntry(.warning, warning)) }
        let layout = AppRuns.layout(of: configuration)
        let state: SweepStateDirectory
        let client: AppStoreAPIClient
        do throws(SweepStop) {
            state = try SweepStateDirectory(layout: layout, readingOnly: listing != nil)
            do {
                client = try AppStoreAPIClient(baseURL: settings.effectiveBaseURL, tokens: tokens, clock: clock)
            } catch {
                throw SweepStop(kind: .failed, reason: error.description)
            }
        } catch {
            report.stop = error
            return report
        }
        let limiter = RateLimiter(maxRequestsPerSecond: settings.maxRequestsPerSecond, clock: clock, deadline: deadline)
        let sweeper = Sweeper(settings: settings, client: client, limiter: limiter, clock: clock,
                              submission: Submission(layout: layout), store: state, listing: listing, deadline: deadline)
        report = sweeper.run()
        let app = "Environment=\(settings.environment.rawValue) BundleID=\(settings.bundleID ?? "(none)")"
        switch report.checkpointMatch {
        case .other(let environment, let bundleID)?:
            log.write(LogEntry(.notice, "\(state.checkpointPath) was for Environment=\(environment ?? "(none)") "
                + "BundleID=\(bundleID ?? "(none)"), not this run's \(app): set aside, and the full pass started "
                + "8 days back, as a first run's does"))
        case .unmarked? where listing == nil:
            log.write(LogEntry(.notice, "\(state.checkpointPath) did not say which Environment= and BundleID= it "
                + "is for (written before 2026-12): taken as this run's (\(app)) and marked so. If either has "
                + "changed since, move it aside: the next run then sweeps the last 8 days"))
        case .unmarked?, .same?, nil:
            break
        }
        if let ahead = report.checkpointAhead {
            log.write(LogEntry(.warning, "\(state.checkpointPath) was dated \(Timestamp.rfc3339(milliseconds: ahead)), "
                + "later than now: a clock once ahead wrote it, and what it claims past that run was never read. "
                + "It was set aside: the full pass started over from 8 days back (copies are superseded)"))
        }
        if listing == nil {
            do {
                try state.saveLastRun(report)
            } catch {
                report.stop = SweepStop.noting("cannot record the result for txrecon status: \(error)", on: report.stop)
            }
        }
        return report
    }

    /// One dry-run line: `signedDate  TYPE[/SUBTYPE]  notificationUUID  last attempt RESULT`.
    static func line(for notification: HistoryNotification) -> String {
        let date = notification.signedDate.map { Timestamp.rfc3339(milliseconds: $0) } ?? "(undated)"
        var type = notification.notificationType ?? "(unreadable)"
        if let subtype = notification.subtype { type += "/" + subtype }
        let uuid = notification.notificationUUID ?? "(no notificationUUID)"
        let attempt = notification.lastSendAttemptResult.map { "  last attempt \($0)" } ?? ""
        return "\(date)  \(LogText.singleLine(type, limit: 80))  \(LogText.singleLine(uuid, limit: 80))"
            + LogText.singleLine(attempt, limit: 80)
    }
}
