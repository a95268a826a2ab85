// RejectedCount: when intake lists rejected/ again for the count that
// STATUS, `txrecon status` and the metrics show. The count is listed, never
// added up: items enter rejected/ from several threads (intake, the receipt
// splitter, every destination's engine) and leave it by requeue-rejected or
// an operator's `rm` (docs/spool.md tells them to remove what the backend
// confirmed), and a sum of what each says it did drifts from the directory.
// A change inotify reports asks for a listing; at most one a second is made,
// as rejected/ may hold many thousands while a producer floods new/ with
// bad drops. Owned by the intake thread; times are its monotonic clock's.
struct RejectedCount {
    static let interval: Duration = .seconds(1)

    private var lastListing: Duration?
    private var changed = false

    /// Something entered or left rejected/ (or events were lost).
    mutating func noteChange() { changed = true }

    /// When the next listing is due, if one is asked for.
    var due: Duration? {
        guard changed else { return nil }
        return lastListing.map { $0 + RejectedCount.interval } ?? .zero
    }

    /// Whether to list rejected/ now; if so, the listing counts as made.
    mutating func listsNow(at now: Duration) -> Bool {
        guard let due, due <= now else { return false }
        changed = false
        lastListing = now
        return true
    }
}
