// AnswerRun: `txrecon answer`: send the outbox to Apple, once. Reads the
// configuration and the In-App Purchase key ([Sweep], as the sweep does:
// the daemon never holds the key), locks outbox/lock, takes what the daemon
// wrote into outbox/new/ into outbox/queue/ (a run that finds the lock held
// takes it too, then exits 75), and sends each entry to the App
// Store Server API of its own environment (App Review's sandbox requests to
// the sandbox, with the same key), paced and retried as the sweep is
// (RateLimiter: Apple's Retry-After, backoff with jitter, each within a
// budget), for at most `sendingTime` in all. Then:
//
//   2xx                         -> outbox/sent/ (kept 30 days)
//   400, 403, 404 with Apple's  -> outbox/aside/ with the reason, an error
//   error code, Apple does not     entry of its own (answerSetAside)
//   know the transaction
//   a consumption entry past its 12 hours, or whose customerConsented is
//   not true (Apple refuses that), or a finish entry in queue/ for 30
//   days (Apple failing or its app's key unusable all along) -> aside/,
//   never sent (again)
//   an entry for no app of the  -> waits in queue/; exit 78
//   configuration
//   401, Apple not knowing the  -> that app stops: its entries wait in
//   app, 404 without an error      queue/, the other apps' go; exit 78
//   code (not Apple's API), 429    (75 for the 429)
//   beyond its budget
//   Apple or the network failing  -> that entry waits in queue/, the
//   beyond the budgets              next one goes; two entries in a row:
//                                   stop, exit 75
//
// The exit status is the most severe of the stops' (AppRuns.mostSevere).
//
// An entry reaches Apple once when nothing crashes: it moves to sent/ right
// after Apple took it; a kill in between sends it again (at most one
// duplicate; both calls are idempotent at Apple). Last, it removes what
// waits for nothing: the markers in confirmed/ of a purchase answered
// already, and those of a purchase not confirmed by every destination
// within 30 days, which is given up (its entry set aside, a warning of its
// own); then sent/ entries sent more than 30 days ago. Runs on its own thread;
// one log entry per entry sent or set aside and one per run.
import Glibc

package enum AnswerRun {
    /// How long a run sends and waits: 25 minutes. txrecon-answer.service's
    /// TimeoutStartSec=30min leaves room beyond it for a request under way
    /// (at most `AppStoreAPIClient.timeoutMilliseconds`) and the
    /// housekeeping, so the run ends with 75 and its report, not killed;
    /// RateLimiter's budgets alone (10 waits of 10 minutes for each entry)
    /// would outlast it. The timer's next run goes on.
    static let sendingTime: Duration = .seconds(25 * 60)

    package static func run(configurationPath: String, environment: [String: String]) async -> Int32 {
        let log = LogSinks.standard(environment: environment)
        ProcessHardening.apply()
        do {
            return try await DedicatedThread.run(name: "txrecon-answer") {
                let report = perform(configurationPath: configurationPath, environment: environment,
                                     clock: SystemSweepClock(), log: log)
                log.write(report.logEntry)
                return report.exitStatus
            }
        } catch {
            var report = AnswerReport()
            report.stop = SweepStop(kind: .failed, reason: error.description)
            log.write(report.logEntry)
            return report.exitStatus
        }
    }

    static func perform(configurationPath: String, environment: [String: String], clock: any SweepClock,
                        log: any LogSink) -> AnswerReport {
        var report = AnswerReport()
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.load(path: configurationPath)
        } catch {
            report.stop = SweepStop(kind: .configuration, reason: error.description)
            return report
        }
        // Each app's answers go with its own token (Apple's `bid`) and
        // pace; without apps, as the configuration says (or why not). An
        // app whose key cannot be used keeps its entries waiting, and the
        // others' go: consumption answers have a deadline.
        let outbox = Outbox(spool: configuration.spool.directory)
        let deadline = clock.now + sendingTime
        var apps: [AnswerSender.App] = []
        for settings in configuration.apps.isEmpty ? [configuration] : configuration.apps.map(configuration.settings) {
            do {
                let tokens = try SweepCredentials.load(for: settings, environment: environment)
                apps.append(AnswerSender.App(settings: settings, tokens: .success(tokens), clock: clock,
                                             deadline: deadline))
            } catch {
                report.appStops.append(SweepStop(kind: .configuration, reason: error.description
                    + "; that app's entries wait in \(outbox.queue)"))
                apps.append(AnswerSender.App(settings: settings, tokens: .failure(error), clock: clock,
                                             deadline: deadline))
            }
        }
        // Sent even when no app's key can be used: the run still takes
        // outbox/new/ into queue/, where the entries wait, so that
        // txrecon-answer.path, which starts a run while new/ holds
        // something, does not start it again and again until its start
        // limit fails it for good; the timer tries again.
        send(outbox, apps: apps, clock: clock, until: deadline, log: log, report: &report)
        // Counted after the run, whichever way it ended (a `defer` would
        // change the report only after it was returned).
        report.counts = outbox.counts()
        report.waiting = report.counts.waiting
        report.finishedAt = clock.wallMilliseconds
        MetricsTextFile.write(report.metrics, as: "txrecon-answer.prom", configuration: configuration, log: log)
        return report
    }

    /// Locks the outbox and sends what it holds, into `report`, starting
    /// no entry after `deadline` (`clock.now`'s scale).
    private static func send(_ outbox: Outbox, apps: [AnswerSender.App], clock: any SweepClock,
                             until deadline: Duration, log: any LogSink, report: inout AnswerReport) {
        guard !SystemCall.isMissing(outbox.new) else {
            report.stop = SweepStop(kind: .failed, reason: "\(outbox.new) does not exist: txrecon.service makes the "
                + "outbox; start it once with this release")
            return
        }
        let lock: Int32
        do {
            lock = try LockFile.acquire(outbox.root + "/lock")
        } catch where error.code == EWOULDBLOCK {
            // Still emptied: txrecon-answer.path starts a run while new/
            // holds anything, and one leaving it full would be started
            // again at once, until systemd's start limit failed the path
            // unit for good (an operator's run waiting out a 429 holds the
            // lock for minutes). Safe beside the holder: it listed queue/
            // once, in its `take`, and sends only that list, so what lands
            // there later waits for the next run; `take` never replaces or
            // removes a file in queue/, so the one the holder is reading or
            // sending stays as it is; and in new/, which both take from,
            // each rename is atomic and the one that loses finds the name
            // gone and goes on.
            do throws(SweepStop) {
                _ = try Self.take(outbox, at: clock.wallMilliseconds)
            } catch {
                report.stop = error
                return
            }
            report.stop = SweepStop(kind: .temporary, reason: "another txrecon answer is sending the outbox (it holds "
                + "\(outbox.root)/lock); what was in \(outbox.new) waits in \(outbox.queue) for the next run")
            return
        } catch {
            report.stop = SweepStop(kind: .failed, reason: "cannot lock the outbox: \(error)")
            return
        }
        defer { LockFile.release(lock) }
        var sender = AnswerSender(apps: apps, outbox: outbox, clock: clock, log: log)
        do throws(SweepStop) {
            for name in try Self.take(outbox, at: clock.wallMilliseconds) {
                guard clock.now < deadline else {
                    throw SweepStop(kind: .temporary, reason: "this run sent for \(TimeSpan.format(sendingTime)), its "
                        + "time within txrecon-answer.service's TimeoutStartSec=; the next run sends what is left in "
                        + outbox.queue)
                }
                try sender.send(name, report: &report)
            }
        } catch {
            report.stop = error
        }
        // Markers first: those of an entry about to leave sent/ are
        // cleared as answered, not given up once it is gone.
        reapConfirmations(outbox, givingUpBefore: clock.wallMilliseconds - Outbox.confirmationRetention.milliseconds,
                          now: clock.wallMilliseconds, log: log, report: &report)
        prune(outbox.sent, olderThan: clock.wallMilliseconds - Outbox.sentRetention.milliseconds, log: log)
    }

    /// Moves what the daemon wrote into queue/; returns what queue/ holds.
    /// An entry queued, sent or set aside already is removed from new/, as
    /// the daemon's `write` would not have written it: it can be there when
    /// the daemon looked before a run moved its twin out of new/ and
    /// renamed it in after. Never replaces a file in queue/, nor fails on
    /// an entry another run took from new/ first: a run that finds the
    /// lock held takes new/ too (`send`). Each entry is dated `now` (ms
    /// since 1970) before it moves: how long it waits in queue/ counts from
    /// then (`OutboxEntry.finishWaitsInQueue`), and a rename keeps the time
    /// it was written, or one from before it was set aside and moved back.
    private static func take(_ outbox: Outbox, at now: Int64) throws(SweepStop) -> [String] {
        do {
            for name in try outbox.entries(in: outbox.new) {
                let source = outbox.new + "/" + name
                if outbox.pastNew(name) == nil {
                    do {
                        try SystemCall.setModificationTime(source, to: now)
                        if try SystemCall.renameNoReplace(source, outbox.queue + "/" + name) {
                            try SystemCall.syncDirectory(outbox.queue)
                            continue
                        }
                    } catch where error.code == ENOENT && SystemCall.isMissing(source) {
                        continue
                    }
                }
                try SystemCall.unlinkIfPresent(source)
            }
            return try outbox.entries(in: outbox.queue)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot take the entries of \(outbox.new): \(error)")
        }
    }

    /// Removes the markers in confirmed/ that wait for nothing: those of a
    /// purchase whose entry is written (the daemon's clearing was cut
    /// short), and those of a purchase whose first confirmation is older
    /// than `limit` (ms since 1970), which is given up: its entry set aside
    /// with the reason, a warning naming it. Under the confirmations' lock,
    /// so that the daemon records no confirmation meanwhile.
    private static func reapConfirmations(_ outbox: Outbox, givingUpBefore limit: Int64, now: Int64,
                                          log: any LogSink, report: inout AnswerReport) {
        do {
            try outbox.withConfirmationsLocked { () throws(SpoolError) in
                for purchase in try outbox.confirmedPurchases() {
                    let written = outbox.pastNew(purchase.name) != nil
                        || !SystemCall.isMissing(outbox.new + "/" + purchase.name)
                    if written {
                        try outbox.clearConfirmations(purchase.name, of: purchase.destinations)
                    } else if purchase.since < limit {
                        try giveUp(purchase, in: outbox, now: now, log: log)
                        report.givenUp += 1
                    }
                }
            }
        } catch {
            log.write(LogEntry(.warning, "answer: cannot look after the markers in \(outbox.confirmed): \(error); "
                               + "the next run tries again"))
        }
    }

    private static func giveUp(_ purchase: Outbox.ConfirmedPurchase, in outbox: Outbox, now: Int64,
                               log: any LogSink) throws(SpoolError) {
        let confirmedBy = purchase.destinations.joined(separator: ", ")
        let reason = "not finished at Apple: \(confirmedBy) confirmed it (first at "
            + "\(Timestamp.rfc3339(milliseconds: purchase.since))), another destination that takes it did not within "
            + "30 days; see with txrecon show why it did not (held, dropped, [Match] or destination changed) and "
            + "finish it from the backend if it should be"
        try outbox.giveUp(purchase, reason: reason, at: now)
        log.write(LogEntry(.warning, "answer: \(purchase.name) set aside in \(outbox.aside): \(reason)",
                           fields: [("TXRECON_OUTBOX_ENTRY", purchase.name), ("TXRECON_CONFIRMED_BY", confirmedBy),
                                    ("TXRECON_REASON", reason)]))
    }

    /// Removes the entries of `directory` last changed before `limit` (ms
    /// since 1970): for sent/, sent before it (`Outbox.moveToSent`).
    private static func prune(_ directory: String, olderThan limit: Int64, log: any LogSink) {
        guard let names = try? SystemCall.listDirectory(directory) else { return }
        for name in names {
            guard let info = try? SystemCall.linkStatus(directory + "/" + name),
                  Int64(info.st_mtim.tv_sec) * 1000 < limit else { continue }
            do {
                try SystemCall.unlinkIfPresent(directory + "/" + name)
            } catch {
                log.write(LogEntry(.warning, "cannot remove \(directory)/\(name), sent more than 30 days ago: \(error)"))
            }
        }
    }
}

/// Sends one entry after another: each with its app's token and pace, a
/// client per app and environment.
struct AnswerSender {
    /// One app's way to Apple.
    struct App {
        let settings: Configuration
        /// Its token issuer, or why its key cannot be used.
        let tokens: Result<APITokenIssuer, ConfigurationError>
        let limiter: RateLimiter

        /// `deadline`: the run's, when its waits must be over.
        init(settings: Configuration, tokens: Result<APITokenIssuer, ConfigurationError>, clock: any SweepClock,
             deadline: Duration) {
            self.settings = settings
            self.tokens = tokens
            limiter = RateLimiter(maxRequestsPerSecond: settings.sweep.maxRequestsPerSecond, clock: clock,
                                  deadline: deadline)
        }

        var bundleID: String? { settings.apps.first?.bundleID ?? settings.sweep.bundleID }
        /// Its name (TXRECON_APP); nil for a configuration without apps.
        var name: String? { settings.apps.first?.name }
    }

    private let apps: [App]
    private let outbox: Outbox
    private let clock: any SweepClock
    private let log: any LogSink
    private var clients: [String: AppStoreAPIClient] = [:]
    /// Why an app stopped in this run, by its name (or bundle id): asked
    /// again, Apple would answer the same.
    private var stopped: [String: SweepStop] = [:]
    /// The bundle ids of entries no app of the configuration is, each
    /// reported once.
    private var unconfigured: Set<String> = []
    /// Whether the entry asked last failed as Apple's service or the
    /// network does (5xx, no answer), beyond the backoff budget.
    private var lastEntryFailed = false

    init(apps: [App], outbox: Outbox, clock: any SweepClock, log: any LogSink) {
        self.apps = apps
        self.outbox = outbox
        self.clock = clock
        self.log = log
    }

    /// The app an entry is for: the one of its bundle id, or the only one.
    private func app(for entry: OutboxEntry) -> App? {
        if let bundleId = entry.bundleId, let app = apps.first(where: { $0.bundleID == bundleId }) { return app }
        return apps.count == 1 && (entry.bundleId == nil || apps[0].bundleID == nil) ? apps[0] : nil
    }

    /// The API an entry of `environment` goes to: `BaseURL=` when set (a
    /// stand-in, a proxy: every entry goes there), else Apple's server of
    /// that environment.
    static func baseURL(for environment: AppStoreEnvironment, settings: SweepSettings) -> String {
        settings.baseURL ?? environment.defaultBaseURL
    }

    /// Sends queue/`name`, or sets it aside; throws what ends the run.
    mutating func send(_ name: String, report: inout AnswerReport) throws(SweepStop) {
        let entry: OutboxEntry
        do {
            entry = try OutboxEntry(json: try outbox.read(name, in: outbox.queue))
        } catch let error as OutboxEntryError {
            return try setAside(name, because: "not an outbox entry: \(error)", app: nil, report: &report)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot read \(outbox.queue)/\(name): \(error)")
        }
        let appName = app(for: entry)?.name
        if let refusal = Self.refusalBeforeSending(entry, queuedAt: outbox.queuedAt(name),
                                                   now: clock.wallMilliseconds) {
            return try setAside(name, because: refusal, app: appName, report: &report)
        }
        guard let app = app(for: entry), case let .success(tokens) = app.tokens else {
            if let app = app(for: entry), case let .failure(problem) = app.tokens {
                log.write(LogEntry(.warning, "answer: \(name) waits in \(outbox.queue): its app's key cannot be used "
                                   + "(\(problem))", fields: Self.fields(name, entry, app: appName)))
                report.waitingForApp += 1
                return
            }
            // Never set aside: the app's file may be back by the next run.
            // Yet the run does not succeed (78): an answer waiting for a
            // configuration nobody was told to fix misses its deadline.
            let bundleId = entry.bundleId ?? "no app"
            log.write(LogEntry(.warning, "answer: \(name) waits in \(outbox.queue): it is for \(bundleId), "
                               + "which no app of the configuration is; add its app file (apps/NAME.conf)",
                               fields: Self.fields(name, entry, app: nil)))
            report.waitingForApp += 1
            if unconfigured.insert(bundleId).inserted {
                let configurationPath = apps.first?.settings.path ?? "the configuration"
                let whose = entry.bundleId.map { "no app of \(configurationPath) has BundleID=\($0)" }
                    ?? "they name no bundle id, and \(configurationPath) serves several apps"
                report.appStops.append(SweepStop(kind: .configuration, reason: "entries for \(bundleId) wait in "
                    + "\(outbox.queue): \(whose); add its app file (apps/NAME.conf), or, for an app gone for "
                    + "good, move its entries into \(outbox.aside)"))
            }
            return
        }
        let appKey = app.name ?? app.bundleID ?? ""
        if let stop = stopped[appKey] {
            log.write(LogEntry(.warning, "answer: \(name) waits in \(outbox.queue): its app stopped in this run (\(stop.reason))",
                               fields: Self.fields(name, entry, app: appName)))
            report.waitingForApp += 1
            return
        }
        let client = try self.client(for: entry.environment, app: app, tokens: tokens)
        var last: APIAnswer<[UInt8]>?
        let asked: Asked<[UInt8]>
        do {
            let request: () -> APIAnswer<[UInt8]> = {
                let answer = client.send(entry)
                last = answer
                return answer
            }
            asked = try AppleAPISession.ask(request, limiter: app.limiter, clock: clock, what: "an acceptance",
                                            resume: "the next run sends what is left in \(outbox.queue)")
        } catch {
            // Apple refusing this app's token or identity, or its rate
            // limit (Apple's are per app), says nothing of another app's:
            // only its entries wait, as those of an app whose key cannot
            // be read do. A failure of Apple's service or of the network
            // (5xx, no answer, beyond the backoff budget) for two entries
            // in a row ends the run: every further entry would fail the
            // same way (the second, if of the same app, is asked once: the
            // backoffs in a row are its app's limiter's); the timer's run
            // tries again. One entry alone may be failing on its own, and
            // queue/ is taken in name order: ending the run there would
            // keep every entry after it waiting, run after run, past a
            // consumption request's 12 hours.
            guard let last, Self.concernsItsApp(last) else {
                guard !lastEntryFailed else { throw error }
                lastEntryFailed = true
                report.entryFailures.append(SweepStop(kind: error.kind, reason: "\(name) waits in \(outbox.queue): "
                    + error.reason))
                log.write(LogEntry(.warning, "answer: \(name) waits in \(outbox.queue): \(error.reason); the run goes "
                                   + "on with the next entry", fields: Self.fields(name, entry, app: appName)))
                return
            }
            var stop = error
            stop.reason = (app.name.map { "app \($0)'s" } ?? "the") + " entries wait in \(outbox.queue): " + stop.reason
            stopped[appKey] = stop
            report.appStops.append(stop)
            log.write(LogEntry(.warning, "answer: \(name) waits in \(outbox.queue): \(error.reason)",
                               fields: Self.fields(name, entry, app: appName)))
            report.waitingForApp += 1
            return
        }
        lastEntryFailed = false
        switch asked {
        case .answer:
            do {
                try outbox.moveToSent(name, at: clock.wallMilliseconds)
            } catch {
                throw SweepStop(kind: .failed, reason: "Apple took \(name), but it could not be moved to "
                    + "\(outbox.sent): \(error); the next run sends it again")
            }
            report.sent += 1
            log.write(LogEntry(.info, "answer: \(name) sent to Apple (\(entry.environment.rawValue))",
                               fields: Self.fields(name, entry, app: appName)))
        case .unknown:
            try setAside(name, because: "Apple does not know transaction \(entry.transactionId) in "
                         + entry.environment.rawValue, app: appName, report: &report)
        case .failed(let why):
            try setAside(name, because: why, app: appName, report: &report)
        }
    }

    /// Whether `last`, the answer a stop came after, is about the one app
    /// asked for rather than Apple or the network as a whole: 401 (its
    /// key), 429 (its rate limit), Apple not knowing the app (its
    /// BundleID=), 404 without an error code (its BaseURL=).
    static func concernsItsApp(_ last: APIAnswer<[UInt8]>) -> Bool {
        guard case .refused(let error) = last else { return false }
        return error.status == 401 || error.status == 429
            || error.errorCode == AnswerDisposition.ErrorCode.rateLimitExceeded
            || error.errorCode.map(AnswerDisposition.ErrorCode.wrongApp.contains) == true
            || (error.status == 404 && error.errorCode == nil)
    }

    /// The journal fields of an entry's log entry.
    private static func fields(_ name: String, _ entry: OutboxEntry, app: String?) -> [(String, String)] {
        var fields = [("TXRECON_OUTBOX_ENTRY", name), ("TXRECON_ID", entry.transactionId)]
        if let app { fields.append(("TXRECON_APP", app)) }
        return fields
    }

    /// Why `entry` is not sent (again), or nil: Apple would refuse it, or
    /// a finish waited in queue/ since `queuedAt` (ms since 1970) for
    /// longer than `OutboxEntry.finishWaitsInQueue`.
    static func refusalBeforeSending(_ entry: OutboxEntry, queuedAt: Int64?, now: Int64) -> String? {
        guard entry.kind == .consumption else {
            guard let queuedAt, now - queuedAt > OutboxEntry.finishWaitsInQueue.milliseconds else { return nil }
            let days = OutboxEntry.finishWaitsInQueue.components.seconds / 86_400
            return "not finished at Apple: it waited in outbox/queue/ since \(Timestamp.rfc3339(milliseconds: queuedAt)), "
                + "more than \(days) days, without Apple taking it; txrecon answer's "
                + "journal entries since say why (Apple or the network failing, the app's key); once that is fixed, "
                + "move it back into outbox/new/ and remove its .reason to try again, or finish it from the backend"
        }
        if let deadline = entry.deadline, now > deadline {
            return "too late: Apple weighs consumption information only until "
                + "\(Timestamp.rfc3339(milliseconds: deadline)), 12 hours after the request"
        }
        if entry.consumptionInformation?["customerConsented"]?.boolValue != true {
            return "customerConsented is not true in the backend's consumptionInformation, and Apple refuses "
                + "consumption information without the customer's consent (HTTP 400)"
        }
        return nil
    }

    private mutating func client(for environment: AppStoreEnvironment, app: App,
                                 tokens: APITokenIssuer) throws(SweepStop) -> AppStoreAPIClient {
        let name = (app.bundleID ?? "") + " " + environment.rawValue
        if let client = clients[name] { return client }
        do {
            let client = try AppStoreAPIClient(baseURL: Self.baseURL(for: environment, settings: app.settings.sweep),
                                               tokens: tokens, clock: clock)
            clients[name] = client
            return client
        } catch {
            throw SweepStop(kind: .failed, reason: error.description)
        }
    }

    /// `app`: the entry's app's name, when it was read and names one.
    private func setAside(_ name: String, because reason: String, app: String?,
                          report: inout AnswerReport) throws(SweepStop) {
        do {
            try outbox.setAside(name, from: outbox.queue, reason: reason, at: clock.wallMilliseconds)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot set \(name) aside (\(reason)): \(error)")
        }
        report.setAside += 1
        log.write(LogEntry(.error, "answer: \(name) set aside in \(outbox.aside): \(reason); it is not sent again",
                           messageID: MessageID.answerSetAside,
                           fields: [("TXRECON_OUTBOX_ENTRY", name), ("TXRECON_REASON", reason)]
                               + (app.map { [("TXRECON_APP", $0)] } ?? [])))
    }
}
