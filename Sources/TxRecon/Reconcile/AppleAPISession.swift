// AppleAPISession: what `txrecon reconcile`, `import` and `lookup` open
// before their first request: the configuration, the In-App Purchase key
// (the sweep's credential), the App Store Server API client and its pace
// ([Sweep]), the ledger for reading, and the daemon's verifier. Opening it
// is where their configuration problems (exit 78) and start-up failures
// (a ledger the daemon has not made yet) are found and worded, once.
// Blocks (files, SQLite): the command's own thread.

final class AppleAPISession {
    let configuration: Configuration
    let layout: SpoolLayout
    let clock: any SweepClock
    let client: AppStoreAPIClient
    let limiter: RateLimiter
    let judge: SnapshotJudge
    let submission: Submission

    /// - Parameter environment: the process environment (CREDENTIALS_DIRECTORY).
    init(configurationPath: String, environment: [String: String], clock: any SweepClock,
         log: any LogSink) throws(SweepStop) {
        let tokens: APITokenIssuer
        let policy: SignedDataPolicy?
        do {
            configuration = try ConfigurationLoader.load(path: configurationPath)
            tokens = try SweepCredentials.load(for: configuration, environment: environment)
            policy = try SignedDataPolicy.load(for: configuration)
        } catch {
            throw SweepStop(kind: .configuration, reason: error.description)
        }
        for warning in ConfigurationWarnings.sweep(configuration.sweep) { log.write(LogEntry(.warning, warning)) }
        layout = SpoolLayout(root: configuration.spool.directory)
        self.clock = clock
        let ledger: SQLiteLedger
        do {
            ledger = try SQLiteLedger(path: configuration.spool.ledgerFile, access: .readOnly)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot read the ledger: \(error); txrecon.service creates and "
                + "migrates it: start it (once) with this release")
        }
        do {
            client = try AppStoreAPIClient(baseURL: configuration.sweep.effectiveBaseURL, tokens: tokens, clock: clock)
        } catch {
            throw SweepStop(kind: .failed, reason: error.description)
        }
        limiter = RateLimiter(maxRequestsPerSecond: configuration.sweep.maxRequestsPerSecond, clock: clock)
        judge = SnapshotJudge(policy: policy, ledger: ledger)
        submission = Submission(layout: layout)
    }

    /// Asks with `request` until Apple answers, waiting as `AnswerDisposition`
    /// says after anything else; `what` names the answer expected, `resume`
    /// what the next run does if this one gives up. Apple's `unknown`
    /// error codes are an answer too: nil.
    func ask<Value>(_ request: () -> APIAnswer<Value>, what: String, unknown: Set<Int64> = [],
                    resume: String) throws(SweepStop) -> Value? {
        while true {
            limiter.awaitTurn()
            let answer = request()
            switch answer {
            case .answered(let value):
                limiter.succeeded()
                return value
            case .refused(let error) where error.errorCode.map(unknown.contains) == true:
                limiter.succeeded()
                return nil
            default:
                break
            }
            switch AnswerDisposition.after(answer, what: what, nowMilliseconds: clock.wallMilliseconds) {
            case .waitAndRetry(let delay):
                guard limiter.waitOutRateLimit(delay) else {
                    throw SweepStop(kind: .temporary, reason: "Apple keeps rate-limiting the requests "
                        + "(Retry-After \(TimeSpan.format(delay))); \(resume)")
                }
            case .backOffAndRetry(let why):
                guard limiter.backOff() else {
                    throw SweepStop(kind: .temporary, reason: "\(why), \(RateLimiter.maximumBackoffs + 1) times in a "
                        + "row; \(resume)")
                }
            case .restartWindow:
                throw SweepStop(kind: .failed, reason: "Apple refused the request as if it were paged; \(resume)")
            case .stop(let stop):
                throw stop
            }
        }
    }
}
