// Gate: suspends work until a test opens it, so that a test decides when
// something slow (a listing, a reply) completes.

package actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    package init() {}

    /// Returns once the gate is open.
    package func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    package func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
