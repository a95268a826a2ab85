// AddressRateLimit: at most so many requests a second from one address, a
// token bucket per address that holds one second's worth; what
// libmicrohttpd does not do. Buckets of addresses quiet for a minute are
// forgotten at the next request, so the table holds only recent clients.
import Synchronization

final class AddressRateLimit: Sendable {
    private struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    /// Requests a second per address; 0 for no limit.
    let perSecond: Int
    private let buckets = Mutex<[String: Bucket]>([:])
    private let swept = Mutex(ContinuousClock.now)

    init(perSecond: Int) { self.perSecond = perSecond }

    /// Whether a request from `address` may go now.
    func allows(_ address: String, now: ContinuousClock.Instant = .now) -> Bool {
        guard perSecond > 0 else { return true }
        let rate = Double(perSecond)
        let forget = swept.withLock { swept -> Bool in
            guard now - swept > .seconds(60) else { return false }
            swept = now
            return true
        }
        return buckets.withLock { buckets in
            if forget { buckets = buckets.filter { now - $0.value.refilled < .seconds(60) } }
            var bucket = buckets[address] ?? Bucket(tokens: rate, refilled: now)
            let elapsed = now - bucket.refilled
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(rate, bucket.tokens + seconds * rate)
            bucket.refilled = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[address] = bucket
            return allowed
        }
    }
}
