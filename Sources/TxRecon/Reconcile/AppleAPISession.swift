// AppleAPISession: what `txrecon reconcile`, `import` and `lookup` open
// before their first request, and how they ask and drop: the configuration,
// the In-App Purchase key (the sweep's credential), the App Store Server API
// client and its pace ([Sweep]), the ledger for reading, and the daemon's
// verifier (SnapshotJudge). Opening it is where their configuration
// problems (exit 78) and start-up failures (a ledger the daemon has not
// made yet) are found and worded, once. They verify Apple's answers, so a
// configuration whose [Verification] checks no signature for [Sweep]'s
// environment (Mode=none, Environment=Xcode) is refused: nothing unverified
// is ever spooled by them. Blocks (files, SQLite, curl): the command's own
// thread.

/// What one question to Apple about a customer or an order came to.
enum Asked<Value> {
    case answer(Value)
    /// Apple does not know the id in this environment
    /// (`AnswerDisposition.ErrorCode.unknownToApple`).
    case unknown
    /// Apple refused this one request (a 4xx other than 401 and 429): the
    /// reason; the others may still be asked.
    case failed(String)
}

final class AppleAPISession {
    let configuration: Configuration
    let layout: SpoolLayout
    let clock: any SweepClock
    let client: AppStoreAPIClient
    private let limiter: RateLimiter
    let judge: SnapshotJudge
    private let submission: Submission

    /// - Parameter environment: the process environment (CREDENTIALS_DIRECTORY).
    /// - Parameter configuration: one app's settings (AppRuns).
    /// - Parameter deadline: on `clock`, when this app's turn ends: no wait
    ///   Apple asks for (Retry-After, backoff) is begun past it.
    init(configuration: Configuration, environment: [String: String], clock: any SweepClock,
         deadline: Duration? = nil, log: any LogSink) throws(SweepStop) {
        self.configuration = configuration
        let tokens: APITokenIssuer
        let loaded: SignedDataPolicy?
        do {
            tokens = try SweepCredentials.load(for: configuration, environment: environment)
            loaded = try SignedDataPolicy.load(for: configuration)
        } catch {
            throw SweepStop(kind: .configuration, reason: error.description)
        }
        let sweepEnvironment = configuration.sweep.environment.rawValue
        guard let policy = loaded, policy.checksSignatures,
              policy.apps.flatMap(\.environments).contains(where: { $0.rawValue == sweepEnvironment }) else {
            throw SweepStop(kind: .configuration, reason: "\(configuration.path): Verification: Apple's answers are "
                + "verified as the daemon verifies what it delivers, and [Verification] does not check signatures "
                + "for [Sweep] Environment=\(sweepEnvironment): set Mode=appstore with Environment= naming "
                + sweepEnvironment)
        }
        for warning in ConfigurationWarnings.sweep(configuration.sweep) { log.write(LogEntry(.warning, warning)) }
        layout = AppRuns.layout(of: configuration)
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
        limiter = RateLimiter(maxRequestsPerSecond: configuration.sweep.maxRequestsPerSecond, clock: clock,
                              deadline: deadline)
        judge = SnapshotJudge(policy: policy, ledger: ledger,
                              destinations: configuration.deliveryConfigurations.map { ($0.name, $0.configuration.match) })
        submission = Submission(layout: layout)
    }

    /// Asks with `request` until Apple answers, waiting as `AnswerDisposition`
    /// says after anything else; `what` names the answer expected, `resume`
    /// what the next run does if this one gives up. Throws only what ends
    /// the run (401, Apple or the network failing on and on).
    /// `retriesConcernThisOne`: Apple's "not found, retry" answers
    /// (4040002, 4040004, 4040006) are about the one account or
    /// transaction asked for; past the backoff budget they fail this
    /// request (`.failed`), not the run, for a caller that keeps what
    /// failed due and goes on with the others (reconcile).
    /// `serverFailuresConcernThisOne`: so do Apple's 5xx answers, but for
    /// the `RateLimiter.maximumServerFailures`th request in a row failing
    /// so, which ends the run (Apple is down): for a caller whose failed
    /// ones are asked again by itself (reconcile: they stay due), where a
    /// run stopped at one account Apple fails on would stop there every
    /// time and never ask the ones after it.
    func ask<Value>(_ request: () -> APIAnswer<Value>, what: String, resume: String,
                    retriesConcernThisOne: Bool = false,
                    serverFailuresConcernThisOne: Bool = false) throws(SweepStop) -> Asked<Value> {
        try Self.ask(request, limiter: limiter, clock: clock, what: what, resume: resume,
                     retriesConcernThisOne: retriesConcernThisOne,
                     serverFailuresConcernThisOne: serverFailuresConcernThisOne)
    }

    /// `ask` paced by `limiter`: also what `txrecon answer` sends its entries with.
    static func ask<Value>(_ request: () -> APIAnswer<Value>, limiter: RateLimiter, clock: any SweepClock,
                           what: String, resume: String, retriesConcernThisOne: Bool = false,
                           serverFailuresConcernThisOne: Bool = false) throws(SweepStop) -> Asked<Value> {
        while true {
            limiter.awaitTurn()
            let answer = request()
            switch answer {
            case .answered(let value):
                limiter.succeeded()
                return .answer(value)
            case .refused(let error) where error.errorCode.map(AnswerDisposition.ErrorCode.unknownToApple.contains) == true:
                limiter.succeeded()
                return .unknown
            default:
                break
            }
            let disposition = AnswerDisposition.after(answer, what: what, nowMilliseconds: clock.wallMilliseconds)
            do {
                if try limiter.wait(after: disposition, resume: resume) { continue }
            } catch {
                guard case .refused(let refusal) = answer else { throw error }
                if retriesConcernThisOne, let code = refusal.errorCode,
                   AnswerDisposition.ErrorCode.notFoundRetryable.contains(code) {
                    // The next one asked starts with the whole budget.
                    limiter.succeeded()
                    return .failed("Apple kept asking to retry (\(refusal.summary)), "
                                   + "\(RateLimiter.maximumBackoffs + 1) times in a row")
                }
                guard serverFailuresConcernThisOne, refusal.status >= 500 else { throw error }
                guard limiter.gaveUpAfterServerFailures() else {
                    throw SweepStop(kind: .temporary, reason: "the App Store Server API failed (\(refusal.summary)) "
                        + "for \(RateLimiter.maximumServerFailures) requests in a row, "
                        + "\(RateLimiter.maximumBackoffs + 1) times each; \(resume)")
                }
                return .failed("the App Store Server API kept failing (\(refusal.summary)), "
                               + "\(RateLimiter.maximumBackoffs + 1) times in a row")
            }
            switch disposition {
            case .waitAndRetry, .backOffAndRetry:
                continue  // waited out above
            case .restartWindow:
                return .failed("Apple refused the request as if it were paged")
            case .stop(let stop):
                // One customer's request refused (400, 403, 404 with another
                // code) says nothing of the next one's.
                if stop.kind == .failed, case .refused(let error) = answer, (400..<500).contains(error.status) {
                    limiter.succeeded()
                    return .failed("Apple refused the request (\(error.summary))")
                }
                throw stop
            }
        }
    }

    /// Drops `bytes` (format 1 or 3) into new/, durable when it returns.
    func drop(_ bytes: [UInt8], resume: String) throws(SweepStop) {
        do {
            try submission.drop(bytes)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot drop into the spool: \(error); \(resume)")
        }
    }
}
