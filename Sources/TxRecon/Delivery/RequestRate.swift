// RequestRate: `MaxRate=`, a token bucket over every request to the
// backend, probes included. Tokens come at `perSecond` and at most one
// second's worth (never less than one) is saved up, so a backlog starts
// with a burst of at most that many requests and then goes at the rate.
// A value the engine consults before it starts an attempt; time is the
// engine clock's.
// Reports: nothing.

struct RequestRate: Sendable, Equatable {
    let perSecond: Double
    private var tokens: Double
    private var updatedAt: Duration?

    init(perSecond: Double) {
        precondition(perSecond > 0, "a rate is positive")
        self.perSecond = perSecond
        tokens = max(1, perSecond)
    }

    private var capacity: Double { max(1, perSecond) }

    /// `50`, `0.5`: as an operator writes it.
    static func format(_ perSecond: Double) -> String {
        perSecond == perSecond.rounded() ? String(Int64(perSecond)) : String(perSecond)
    }

    /// When the next request may start: `now`, or when its token comes.
    mutating func nextRequest(now: Duration) -> Duration {
        refill(now)
        guard tokens < 1 else { return now }
        // At most a day: MaxRate= is at least 0.001 (1,000 s a request),
        // and Int64(_:) traps on a Double that does not fit.
        let seconds = min((1 - tokens) / perSecond, 86_400)
        return now + .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// A request starts at `now` (after `nextRequest` said it may).
    mutating func take(now: Duration) {
        refill(now)
        tokens -= 1
    }

    private mutating func refill(_ now: Duration) {
        defer { updatedAt = now }
        guard let updatedAt, now > updatedAt else { return }
        let (seconds, attoseconds) = (now - updatedAt).components
        let elapsed = Double(seconds) + Double(attoseconds) / 1e18
        tokens = min(capacity, tokens + elapsed * perSecond)
    }
}
