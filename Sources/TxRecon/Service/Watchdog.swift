// Watchdog: pings systemd's watchdog at half its timeout, but only after the
// delivery engine itself answered, so a wedged engine stops the pings and
// systemd restarts the daemon. A repeating dispatch timer, not a sleeping
// task: Task.sleep on Linux would wake the process every second.
// Reports: nothing; a ping that cannot be sent is the notifier's to log.
import Dispatch
import Synchronization

final class Watchdog: Sendable {
    private let timer: Mutex<(any DispatchSourceTimer)?>

    /// Starts pinging every `interval` (the notifier's watchdogPingInterval);
    /// does nothing when no watchdog is enabled.
    init(engine: DeliveryEngine, health: any HealthNotifier) {
        guard let interval = health.watchdogPingInterval else {
            timer = Mutex(nil)
            return
        }
        let queue = DispatchQueue(label: "txrecon.watchdog")
        let source = DispatchSource.makeTimerSource(queue: queue)
        let gate = HeartbeatGate()
        source.setEventHandler { @Sendable in
            // A heartbeat still waiting for a wedged engine is not stacked upon.
            guard gate.enter() else { return }
            Task {
                if await engine.heartbeat() { health.notify("WATCHDOG=1") }
                gate.leave()
            }
        }
        let nanoseconds = Int(interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
        source.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
                        leeway: .nanoseconds(nanoseconds / 10))
        source.resume()
        timer = Mutex(source)
    }

    func stop() {
        timer.withLock { source in
            source?.cancel()
            source = nil
        }
    }
}

/// At most one heartbeat in flight.
private final class HeartbeatGate: Sendable {
    private let busy = Atomic<Bool>(false)

    func enter() -> Bool { !busy.exchange(true, ordering: .acquiringAndReleasing) }
    func leave() { busy.store(false, ordering: .releasing) }
}
