// AnswerDisposition: what the sweep does after an answer that is not a page,
// decided in one function from one table (one test per row):
//
//   429 (RateLimitExceededError, 4290000)     wait for Retry-After, same page
//                                             (no usable Retry-After: back off)
//   5xx, 5000001 (GeneralInternalRetryable),  back off with jitter, same page
//   4040002, 4040004, 4040006 (Apple's
//   retryable "not found yet"),
//   a 200 that is not a page, no answer
//   4000014 / 4000017 (invalid or expired     start the window again from
//   pagination token)                         its first page
//   401                                       stop: configuration (exit 78)
//   4000012 (start date too far in the past)  stop: failed (the clock is off)
//   any other answer                          stop: failed, with Apple's code
//
// Pure; the texts name what to check and never carry a token or payload.

/// Why a run stopped early, and the exit status that says so.
package struct SweepStop: Error, Sendable, Equatable {
    package enum Kind: String, Sendable {
        /// Credentials or settings are wrong: exit 78, rerunning cannot help.
        case configuration
        /// Apple or the network keeps failing: exit 75 (EX_TEMPFAIL); the
        /// next run resumes from the checkpoint.
        case temporary
        /// Anything else the sweep cannot get past: exit 1.
        case failed
    }

    var kind: Kind
    /// One line for the operator.
    var reason: String

    package init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// `stop` with `note` added to its reason, or a failure of `note` alone
    /// when the run had not stopped: what a run that could not record its
    /// result ends with (the outcome stands; only `txrecon status` misses it).
    static func noting(_ note: String, on stop: SweepStop?) -> SweepStop {
        guard var stop else { return SweepStop(kind: .failed, reason: note) }
        stop.reason += "; \(note)"
        return stop
    }

    /// 78 (EX_CONFIG), 75 (EX_TEMPFAIL) or 1.
    var exitStatus: Int32 {
        switch kind {
        case .configuration: ConfigurationError.exitStatus
        case .temporary: Self.temporaryExitStatus
        case .failed: 1
        }
    }

    /// sysexits.h EX_TEMPFAIL
    static let temporaryExitStatus: Int32 = 75
}

/// The sweep's next step after an answer that is not a page.
enum AnswerDisposition: Equatable {
    /// Wait this long, then ask for the same page again.
    case waitAndRetry(Duration)
    /// Back off (`RateLimiter.backOff`), then ask for the same page again;
    /// the text says why, for the reason if the backoff budget runs out.
    case backOffAndRetry(String)
    /// Ask for the window's first page again, without a token.
    case restartWindow
    case stop(SweepStop)

    /// Apple's error codes the table names.
    enum ErrorCode {
        static let rateLimitExceeded: Int64 = 4_290_000
        static let generalInternalRetryable: Int64 = 5_000_001
        static let startDateTooFarInPast: Int64 = 4_000_012
        static let invalidPaginationToken: Int64 = 4_000_014
        static let paginationTokenExpired: Int64 = 4_000_017
        /// AccountNotFoundRetryable, AppNotFoundRetryable,
        /// OriginalTransactionIdNotFoundRetryable: ask again later.
        static let notFoundRetryable: Set<Int64> = [4_040_002, 4_040_004, 4_040_006]
        /// A transaction or customer Apple does not have in this
        /// environment: InvalidTransactionId, AccountNotFound,
        /// OriginalTransactionIdNotFound, TransactionIdNotFound. An answer
        /// about that customer, not a failure of the run.
        static let unknownToApple: Set<Int64> = [4_000_006, 4_040_001, 4_040_005, 4_040_010]
        /// InvalidAppIdentifier, AppNotFound: about the app the run asks
        /// for, so every request of the run would get the same.
        static let wrongApp: Set<Int64> = [4_000_002, 4_040_003]
    }

    /// The step after `answer`, which is not `.page`; `nowMilliseconds` (wall
    /// clock) reads a `Retry-After` given as a UNIX time.
    static func after(_ answer: HistoryAnswer, nowMilliseconds: Int64) -> AnswerDisposition {
        switch answer {
        case .page:
            preconditionFailure("AnswerDisposition.after: a page is not a failure")
        case .malformed(let detail):
            return .backOffAndRetry("Apple's answer is not a notification history page: \(detail)")
        case .unreachable(let detail):
            return .backOffAndRetry("no answer from the App Store Server API: \(detail)")
        case .refused(let error):
            return after(error, nowMilliseconds: nowMilliseconds)
        }
    }

    /// The step after an answer of another endpoint that is not `.answered`;
    /// `what` names what a 200 should have held ("a subscription status answer").
    static func after<Value>(_ answer: APIAnswer<Value>, what: String, nowMilliseconds: Int64) -> AnswerDisposition {
        switch answer {
        case .answered:
            preconditionFailure("AnswerDisposition.after: an answer is not a failure")
        case .malformed(let detail):
            return .backOffAndRetry("Apple's answer is not \(what): \(detail)")
        case .unreachable(let detail):
            return .backOffAndRetry("no answer from the App Store Server API: \(detail)")
        case .refused(let error):
            return after(error, nowMilliseconds: nowMilliseconds)
        }
    }

    private static func after(_ error: AppStoreAPIError, nowMilliseconds: Int64) -> AnswerDisposition {
        if error.status == 429 || error.errorCode == ErrorCode.rateLimitExceeded {
            guard let delay = RateLimiter.retryAfterDelay(error.retryAfter, nowMilliseconds: nowMilliseconds) else {
                return .backOffAndRetry("rate limited (\(error.summary)) without a usable Retry-After")
            }
            return .waitAndRetry(delay)
        }
        if error.status == 401 {
            return .stop(SweepStop(kind: .configuration, reason: "the App Store Server API refused the credentials "
                + "(HTTP 401); check IssuerID=, KeyID= and BundleID= under [Sweep], that the key is an active "
                + "In-App Purchase key of that issuer, and the host's clock"))
        }
        switch error.errorCode {
        case ErrorCode.invalidPaginationToken?, ErrorCode.paginationTokenExpired?:
            return .restartWindow
        case ErrorCode.generalInternalRetryable?:
            return .backOffAndRetry("Apple asks to retry (\(error.summary))")
        case let code? where ErrorCode.notFoundRetryable.contains(code):
            return .backOffAndRetry("Apple asks to retry (\(error.summary))")
        case ErrorCode.startDateTooFarInPast?:
            return .stop(SweepStop(kind: .failed, reason: "Apple finds the start date too far in the past "
                + "(\(error.summary)); check the host's clock"))
        case let code? where ErrorCode.wrongApp.contains(code):
            return .stop(SweepStop(kind: .configuration, reason: "Apple does not know the app asked for "
                + "(\(error.summary)); check BundleID= under [Sweep] (or the app's file) and the environment"))
        case nil where error.status == 404:
            // Apple's 404s carry an errorCode; one without is no answer of
            // Apple's, and every request of the run would get it.
            return .stop(SweepStop(kind: .configuration, reason: "the App Store Server API answered 404 without "
                + "an error code (\(error.summary)): check BaseURL= under [Sweep] and any proxy in between"))
        default:
            break
        }
        if error.status >= 500 {
            return .backOffAndRetry("the App Store Server API failed (\(error.summary))")
        }
        return .stop(SweepStop(kind: .failed, reason: "the App Store Server API refused the request (\(error.summary))"))
    }
}
