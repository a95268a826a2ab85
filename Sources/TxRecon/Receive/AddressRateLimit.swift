// AddressRateLimit: at most so many requests a second from one address, a
// token bucket per address that holds one second's worth; what
// libmicrohttpd does not do. Buckets of addresses quiet for a minute are
// forgotten at the next request, so the table holds only recent clients.
// An IPv6 client counts by its /64, which one subscriber holds whole; and
// past `capacity` buckets, addresses not yet known share one, so that a
// flood from many addresses neither grows the table without bound nor
// escapes the limit.
import Glibc
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

    /// Buckets kept at most; then the newcomers' shared one.
    let capacity: Int
    static let sharedBucket = "(addresses beyond the table)"

    init(perSecond: Int, capacity: Int = 65_536) {
        self.perSecond = perSecond
        self.capacity = capacity
    }

    /// What `address` counts as: itself, or for IPv6 its /64. An IPv4
    /// client of a dual-stack socket (`::ffff:a.b.c.d`) counts as itself.
    static func subject(of address: String) -> String {
        guard address.contains(":") else { return address }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        let raw = withUnsafeBytes(of: &bytes) { Array($0) }
        if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
            return raw[12...].map { String($0) }.joined(separator: ".")
        }
        return raw.prefix(8).map { String($0, radix: 16) }.joined(separator: ".") + "/64"
    }

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
            var subject = Self.subject(of: address)
            if buckets[subject] == nil, buckets.count >= capacity { subject = Self.sharedBucket }
            var bucket = buckets[subject] ?? Bucket(tokens: rate, refilled: now)
            let elapsed = now - bucket.refilled
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(rate, bucket.tokens + seconds * rate)
            bucket.refilled = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[subject] = bucket
            return allowed
        }
    }
}
