// eventually: how an integration test waits for another process or thread
// to bring something about, with a bound instead of a fixed sleep.

/// Waits until `condition` holds (checked every 20 ms), up to `timeout`.
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
