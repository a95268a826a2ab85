// ReconcileSettings: the [Reconcile] section of txrecon.conf, read only by
// `txrecon reconcile`: how often every known subscription is checked with
// Apple. Apple's API settings (server, key, app, pace) are the sweep's
// ([Sweep]), so one key and one rate limit serve both. Nothing here reads a
// file.

/// `[Reconcile]`
package struct ReconcileSettings: Sendable, Equatable {
    /// `FullCycle=`: every subscription that is active, in grace period or
    /// billing retry, or expired less than `ReconcileSchedule.expiredCandidacy`
    /// ago is checked once in this span, the first checks spread over it.
    /// Default 7 days; 1 hour to 90 days.
    package var fullCycle: Duration = .seconds(7 * 86_400)

    package init() {}
}

extension SettingValue {
    /// `FullCycle=`: 1 hour to 90 days.
    static func reconcileCycle(_ text: String) throws(InvalidValue) -> Duration {
        let span = try timeSpan(text)
        guard span >= .seconds(3600), span <= .seconds(90 * 86_400) else {
            throw InvalidValue(message: "\"\(text)\" is not between 1h and 90d")
        }
        return span
    }
}
