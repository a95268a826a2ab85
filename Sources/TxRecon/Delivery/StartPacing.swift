// StartPacing: whether and when the engine's next attempt may start, one
// owned value: the attempts out (against the engine's limit on them), the
// backend's health (while it fails, one probe at a time), MaxRate='s bucket,
// and the timer armed for the next start. The engine arms and cancels that
// timer on its own thread; this value only keeps it. Reports nothing.

struct StartPacing {
    /// Attempts handed to the transport and not ended yet.
    var active = 0
    /// Whether the backend answers; the engine mirrors it in its status.
    var health = BackendHealth()
    /// MaxRate='s bucket; nil without a limit.
    private var rate: RequestRate?
    /// The sleep until the next start, and when it ends.
    var timer: (timer: EngineTimer, deadline: Duration)?

    init(maxRate: Double?) {
        rate = maxRate.map(RequestRate.init(perSecond:))
    }

    /// A reload's MaxRate= (the bucket starts full again only when it changed).
    mutating func setMaxRate(_ maxRate: Double?, was old: Double?) {
        if maxRate != old { rate = maxRate.map(RequestRate.init(perSecond:)) }
    }

    /// When the attempt of the key due first (at `due`) may start; nil
    /// while a probe is out to a failing backend. While the backend fails
    /// it is spared: one probe at a time, at the probe schedule's time or
    /// the key's own next attempt, whichever is later (the probe is the key
    /// due first: a failing backend never makes a key go earlier than its
    /// schedule). Attempts sent before the outage began are not waited
    /// for: they end on their own (by `Timeout=` at the latest), and a hung
    /// one must not keep the probe from seeing the backend return.
    /// `MaxRate=` may put any start off. `now`: the caller's reading of the
    /// clock. One reading throughout: a clock read again here is later than
    /// the caller's, and with MaxRate= "a token now" would be a start just
    /// after the caller's `now`, never due, and the timer armed for it
    /// would fire and find the same again, for ever.
    mutating func start(due: Duration, now: Duration) -> Duration? {
        var start = due
        if health.isFailing {
            guard health.probe == nil else { return nil }
            start = max(start, health.nextProbeAt ?? now)
        }
        if let allowed = rate?.nextRequest(now: now) { start = max(start, allowed) }
        return start
    }

    /// An attempt of `key` starts at `now`: while the backend fails it is
    /// the probe.
    mutating func started(_ key: ItemKey, now: Duration) {
        active += 1
        if health.isFailing { health.probe = key }
        rate?.take(now: now)
    }
}
