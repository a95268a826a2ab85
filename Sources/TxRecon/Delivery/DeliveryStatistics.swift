// DeliveryStatistics: running totals the engine keeps for the metrics file,
// beside the gauges EngineStatus already carries. Part of EngineStatus, so
// it travels with every published status; nothing here is persisted, so all
// of it starts from zero when the daemon starts (Prometheus counters may).
// Reports: nothing.

/// What attempts and drops came to since the daemon started. Delivered and
/// superseded items are counted by `EngineStatus.delivered` and
/// `.superseded` themselves, not here.
struct DeliveryStatistics: Sendable, Equatable {
    /// Attempts that ended in "try again later" (backend failures, 202, 429,
    /// 5xx, or a local spool error), one per deferral the journal logs.
    var deferred = 0
    /// Items moved to hold/: refused by the backend, or no longer decodable.
    var held = 0
    /// Drops intake moved to rejected/.
    var rejected = 0
    /// Verified notifications taken that carry a name Apple added since
    /// this release (AppleNovelty), by name; counted by `[Backend]`'s
    /// engine for intake.
    var novelties: [AppleNovelty: Int] = [:]
    /// Entries this destination's confirmations wrote into outbox/new/.
    var answersQueued = 0
    /// CONSUMPTION_REQUESTs warned about as unconfirmed near their deadline.
    var consumptionDeadlineWarnings = 0
    /// Items delivered, by the name of their app (none for an item that
    /// names no app configured, such as an envelope).
    var deliveredByApp: [String: Int] = [:]
    /// Delivered snapshots queued again by `txrecon replay`.
    var replayed = 0
    /// Failed attempts against the backend since it last answered; 0 once
    /// it answers (a refusal of one item is an answer).
    var consecutiveBackendFailures = 0
    /// How long attempts that reached the transport took, from reading the
    /// item to the answer or the failure, on the engine's clock.
    var attemptDurations = DurationHistogram()
}
