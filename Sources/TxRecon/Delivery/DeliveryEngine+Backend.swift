// DeliveryEngine and the backend's health (the state is StartPacing's
// BackendHealth): what an ended attempt's answer or failure changes. An
// outage that begins is logged once, intake stops waiting for the window,
// and one probe at a time goes out; one that ends is logged with the keys
// it woke. The status mirrors the health after every change.

extension DeliveryEngine {
    /// An answer from the backend (delivered or refused for good). After an
    /// outage, every key that waits only because the backend failed is due
    /// at once: the schedule paced the retries while the backend was down,
    /// it is no reason to keep a recovered backend waiting up to 5 minutes.
    /// `requestSent`: when the request that got the answer went out.
    func backendAnswered(requestSent: Duration) {
        let change = pacing.health.answered(requestSent: requestSent)
        mirrorHealth()
        guard case let .outageEnded(since) = change else { return }
        let seconds = (clock.wallMilliseconds - since) / 1000
        let now = clock.now
        let woken = pending.wakeWaitingForBackend(now: now)
        log.write(LogEntry(.notice, "backend recovered after failing for \(seconds)s; "
                           + "\(woken) waiting item(s) are due now", messageID: MessageID.backendRecovered))
    }

    func backendFailed(_ key: ItemKey, _ reason: String, at wall: Int64, retryAfter: Duration?, wasProbe: Bool) {
        let change = pacing.health.failed(key, reason, at: wall, now: clock.now, retryAfter: retryAfter, wasProbe: wasProbe,
                                   probes: settings.probeSchedule)
        mirrorHealth()
        guard change == .outageBegan else { return }
        // Intake no longer waits for the window (see windowLacksRoom).
        publishLoad(wakes: true)
        log.write(LogEntry(.warning, "backend failing: \(LogText.singleLine(reason, limit: 200)); "
                           + "items stay queued; one probe at a time goes to it until it answers",
                           messageID: MessageID.backendFailing, fields: [("TXRECON_REASON", reason)]))
    }

    fileprivate func mirrorHealth() {
        published.status.backend = pacing.health.condition
        published.status.statistics.consecutiveBackendFailures = pacing.health.consecutiveFailures
    }
}
