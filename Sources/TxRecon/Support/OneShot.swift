// OneShot: an action run at most once, by whichever of several threads asks
// first. Intake's start-up `ready` is one: it is due either when the
// start-up scan ends or when that scan first waits for deliveries to make
// room, whichever comes first, and the daemon must hear it exactly once.
// Reports: nothing.
import Synchronization

final class OneShot: Sendable {
    private let action: Mutex<(@Sendable () -> Void)?>

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = Mutex(action)
    }

    /// Runs the action unless it has run; outside the lock, so the action
    /// may take as long as it needs or ask again (a no-op then).
    func fire() {
        action.withLock { $0.take() }?()
    }
}
