// RetrySchedule: how long an item waits after a failed attempt.
//
// The delays come from `RetryDelays=` (default 2s 5s 15s 30s 1min 5min);
// after the last step the last delay repeats forever. There is no attempt
// limit: an item is never dropped for having failed too often. The same
// shape paces the probes of a failing backend (`ProbeDelays=`).

/// The wait before the next attempt, by the number of failed attempts so far.
package struct RetrySchedule: Sendable, Equatable {
    /// Never empty; each delay is positive.
    package let delays: [Duration]

    package static let standard = RetrySchedule(delays: [
        .seconds(2), .seconds(5), .seconds(15), .seconds(30), .seconds(60), .seconds(300),
    ])!

    /// `ProbeDelays=`: how often a failing backend is probed (BackendHealth).
    /// Short: a probe is one request, and recovery is noticed within a step.
    package static let probing = RetrySchedule(delays: [.seconds(1), .seconds(2), .seconds(5), .seconds(10)])!

    /// nil when `delays` is empty or holds a delay that is not positive.
    package init?(delays: [Duration]) {
        guard !delays.isEmpty, delays.allSatisfy({ $0 > .zero }) else { return nil }
        self.delays = delays
    }

    /// The delay after `failedAttempts` failures (1 for the first failure).
    /// A `Retry-After` the backend sent raises the delay, never lowers it.
    package func delay(afterFailedAttempts failedAttempts: Int, retryAfter: Duration? = nil) -> Duration {
        let step = delays[min(max(failedAttempts, 1), delays.count) - 1]
        guard let retryAfter else { return step }
        return max(step, min(retryAfter, Outcome.retryAfterCap))
    }

    /// The longest delay this schedule can produce, `Retry-After` included:
    /// a persisted next-attempt time further away than this (say, after the
    /// wall clock jumped back) is pulled in to it.
    package var longestDelay: Duration { max(delays.max()!, Outcome.retryAfterCap) }
}

/// Parsing of the `Retry-After` header: delay-seconds or an HTTP-date.
enum RetryAfter {
    /// The delay the header asks for, counted from `now` (seconds since 1970),
    /// capped at `Outcome.retryAfterCap`; nil when the header is malformed.
    static func delay(from header: String, now: Double) -> Duration? {
        let text = header.trimmingASCIISpaces()
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            let seconds = Int64(text) ?? Int64.max
            return min(.seconds(seconds), Outcome.retryAfterCap)
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        let seconds = max(0, date - now)
        return min(.milliseconds(Int64((seconds * 1000).rounded(.up))), Outcome.retryAfterCap)
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingASCIISpaces() -> String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
