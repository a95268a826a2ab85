// RecordingHealthNotifier: a HealthNotifier for unit tests that keeps every
// notification in memory instead of talking to systemd, with a watchdog ping
// interval the test chooses. Safe to call from any thread.
import Synchronization
import TxRecon

/// Keeps the notifications sent to it, in order.
package final class RecordingHealthNotifier: HealthNotifier {
    package let watchdogPingInterval: Duration?
    private let recorded = Mutex<[String]>([])

    /// - Parameter watchdogPingInterval: what the code under test is told;
    ///   default nil (no watchdog).
    package init(watchdogPingInterval: Duration? = nil) {
        self.watchdogPingInterval = watchdogPingInterval
    }

    package func notify(_ assignments: String) {
        recorded.withLock { $0.append(assignments) }
    }

    /// Every notification as sent (newline-separated assignments), oldest first.
    package var notifications: [String] { recorded.withLock { $0 } }

    /// Every single `KEY=value` assignment across all notifications, in order.
    package var assignments: [String] {
        notifications.flatMap { $0.split(separator: "\n").map(String.init) }
    }

    /// The value of the latest `STATUS=` assignment, nil before the first.
    package var lastStatus: String? {
        assignments.last { $0.hasPrefix("STATUS=") }.map { String($0.dropFirst("STATUS=".count)) }
    }

    /// How many `WATCHDOG=1` pings were sent.
    package var watchdogPings: Int {
        assignments.count { $0 == "WATCHDOG=1" }
    }
}
