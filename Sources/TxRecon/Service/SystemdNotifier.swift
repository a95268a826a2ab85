// SystemdNotifier: the production HealthNotifier, over sd_notify(3) and
// sd_watchdog_enabled(3). Both read the environment systemd sets
// (NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID) and leave it in place. Without
// NOTIFY_SOCKET (run from a shell) every notification is a no-op. Reports a
// warning through the given log sink when a notification cannot be sent
// (once, until one succeeds again, so a lost socket does not flood the log
// with one line per watchdog ping) and when WATCHDOG_USEC is malformed.
import CSystemd
import Glibc
import Synchronization

/// Tells systemd about readiness, status, watchdog pings and stopping.
package final class SystemdNotifier: HealthNotifier {
    /// Half of WATCHDOG_USEC, read once at creation (systemd does not change
    /// it during a run); nil when no watchdog is enabled for this process.
    package let watchdogPingInterval: Duration?
    private let log: (any LogSink)?
    /// Whether the last notification failed, to warn once per failure run.
    private let failing = Mutex(false)

    /// - Parameter log: where failures to notify are reported; nil ignores them.
    package init(log: (any LogSink)? = nil) {
        self.log = log
        var timeout: UInt64 = 0
        let enabled = sd_watchdog_enabled(0, &timeout)
        if enabled < 0 {
            log?.write(LogEntry(.warning, "WATCHDOG_USEC is not a valid number of microseconds "
                + "(\(Self.describe(enabled))); the watchdog will not be pinged"))
        }
        // Pinging at half the timeout leaves a whole half for a late wake-up.
        watchdogPingInterval = enabled > 0 && timeout > 0 ? .microseconds(timeout / 2) : nil
    }

    package func notify(_ assignments: String) {
        guard !assignments.isEmpty else { return }
        let result = sd_notify(0, assignments)
        let wasFailing = failing.withLock { failing in
            defer { failing = result < 0 }
            return failing
        }
        if result < 0 && !wasFailing {
            let first = assignments.split(separator: "\n").first.map(String.init) ?? assignments
            log?.write(LogEntry(.warning, "cannot notify systemd (\(Self.describe(result))) of \(first); "
                + "check that NOTIFY_SOCKET names a socket this service may write to",
                fields: [("TXRECON_ERRNO", String(-result))]))
        }
    }

    private static func describe(_ negativeErrno: Int32) -> String {
        String(cString: strerror(-negativeErrno))
    }
}
