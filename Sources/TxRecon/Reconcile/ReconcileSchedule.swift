// ReconcileSchedule: which customers one run of `txrecon reconcile` asks
// Apple about, decided in one function from what the ledger knows (each
// subscription's latest expiresDate) and when the customer was last checked:
//
//   a subscription's expiresDate passed 1 h ago, 25 h ago,   expiry: a DID_RENEW,
//   and the customer was not checked since (never checked:   EXPIRED or
//   only if it expired less than 25 h before the first run)  DID_FAIL_TO_RENEW missed
//   a subscription live in a gap (its expiresDate after the  gap: what Apple sent
//   gap's start, not expired more than 180 days), and the    may have been lost
//   customer not checked since the gap ended                 (ReconcileGaps)
//   a subscription not expired more than 180 days,           cycle
//   and no check for FullCycle= (never checked: due at
//   the first run + a share of the cycle, so that the
//   first checks of an installation spread over a cycle)
//   --all                                                    all
//   anything else                                            not due
//
// "No newer snapshot seen" needs no rule of its own: a renewal that was
// delivered moved the ledger's expiresDate, and the checks follow it.
// A check recorded later than now (a wall clock once ahead) counts as
// none. Pure; times are wall-clock ms since 1970.

/// Why a customer is checked.
enum ReconcileReason: String, Sendable, Equatable {
    case expiry
    case gap
    case cycle
    case all

    /// The order a run asks Apple in: expiry checks first (few, and each
    /// likely a change the backend lacks), then a gap's (one refused
    /// notification makes every live subscription due: hours of requests),
    /// then the cycle's, then --all's. A gap's long run, or one stopped and
    /// begun again from the top, never keeps an expiry waiting behind it.
    static let askingOrder: [ReconcileReason] = [.expiry, .gap, .cycle, .all]
}

struct ReconcileSchedule: Sendable {
    /// How long after a subscription's expiresDate it is checked: about an
    /// hour (the renewal or its failure is known by then) and a day later
    /// (billing retry's first day, a renewal Apple recorded late).
    static let expiryChecks: [Int64] = [3_600_000, 25 * 3_600_000]
    /// How long an expired subscription stays in the cycle: a customer may
    /// come back (win-back offers, resubscribing) for this long after
    /// expiring and still be found by the cycle.
    static let expiredCandidacy: Int64 = 180 * 86_400_000

    /// `FullCycle=`, ms.
    var fullCycle: Int64
    /// When reconcile first ran on this spool, ms since 1970.
    var firstRun: Int64
    /// The gaps reported and not yet settled.
    var gaps: [ReconcileGap] = []

    /// Why `customer`, whose subscriptions expire at `expiresDates`, is due
    /// at `now`; nil when it is not.
    func reason(customer: String, expiresDates: [Int64], lastChecked recorded: Int64?, now: Int64) -> ReconcileReason? {
        let lastChecked = Self.mark(recorded, asOf: now)
        let checked = lastChecked ?? Int64.min
        for expiresDate in expiresDates where now - expiresDate <= Self.expiredCandidacy
            && (lastChecked != nil || neverCheckedKeepsExpiryChecks(expiresDate)) {
            for delay in Self.expiryChecks where now >= expiresDate + delay && checked < expiresDate + delay {
                return .expiry
            }
        }
        guard expiresDates.contains(where: { now - $0 <= Self.expiredCandidacy }) else { return nil }
        for gap in gaps where checked < gap.to && Self.isLive(expiresDates, in: gap, now: now) {
            return .gap
        }
        let due = lastChecked.map { $0 + fullCycle } ?? firstRun + Self.phase(of: customer, in: fullCycle)
        return now >= due ? .cycle : nil
    }

    /// Whether a customer never checked (a new installation, an upgrade, a
    /// deleted state file) is asked about a subscription that expired at
    /// `expiresDate` on its expiry checks' times, rather than at its place
    /// in the first cycle: when the first run falls before or among them
    /// (expired at most 25 h before it), so that what has just lapsed is
    /// asked about as the schedule says (at most a day's expiries: a
    /// thirtieth of monthly subscriptions). Older expiries are the
    /// installation's backlog: were they due at once, installing on a live
    /// app would ask Apple about every subscription that lapsed in the
    /// last 180 days in its first hours.
    private func neverCheckedKeepsExpiryChecks(_ expiresDate: Int64) -> Bool {
        expiresDate + (Self.expiryChecks.last ?? 0) >= firstRun
    }

    /// A time the state recorded (a check, the first run), as read at
    /// `now`: nil, as if never, when it is later than now. A wall clock
    /// once far ahead wrote it; taken as it is, it would keep the customer
    /// out of every check (and the spread of first checks from starting)
    /// until then. As now it would not do: now moves on with every run, and
    /// the cycle would never come. Never costs one check of that customer,
    /// which then records a true time.
    static func mark(_ recorded: Int64?, asOf now: Int64) -> Int64? {
        recorded.flatMap { $0 <= now ? $0 : nil }
    }

    /// Whether a customer whose subscriptions expire at `expiresDates` was
    /// live during `gap`, as a candidate at `now`: what Apple sent about it
    /// then may not have reached txrecon.
    static func isLive(_ expiresDates: [Int64], in gap: ReconcileGap, now: Int64) -> Bool {
        expiresDates.contains { now - $0 <= expiredCandidacy && $0 >= gap.from }
    }

    /// Where in a cycle `customer`'s first check falls: FNV-1a of its id
    /// (stable across runs, unlike Swift's seeded hashing) modulo the cycle.
    static func phase(of customer: String, in cycle: Int64) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in customer.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return Int64(hash % UInt64(max(cycle, 1)))
    }
}
