// HealthNotifier: how the daemon tells its supervisor about its state
// (sd_notify in production, a recording fake in tests).

/// Sends sd_notify-style state lines such as `READY=1`, `STATUS=…`,
/// `WATCHDOG=1`, `STOPPING=1`, `RELOADING=1`.
package protocol HealthNotifier: Sendable {
    /// Sends newline-separated `KEY=value` assignments in one message.
    /// Does nothing when there is no supervisor (no NOTIFY_SOCKET).
    func notify(_ assignments: String)

    /// Half the supervisor's watchdog timeout (when to ping), or nil when no
    /// watchdog is enabled for this process.
    var watchdogPingInterval: Duration? { get }
}
