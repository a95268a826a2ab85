// ConfirmationRecorder: where an engine reports what its destination
// confirmed, once the item is in done/ (LedgerService in the daemon, a
// recording fake in tests). Never blocks the engine; reports nothing.

package protocol ConfirmationRecorder: Sendable {
    /// `destination` confirmed `item` on `attempt` at `at` (ms since 1970),
    /// and the item has been moved into done/.
    func record(destination: String, item: Item, attempt: Int, confirmation: Confirmation, at: Int64)
}

extension LedgerService: ConfirmationRecorder {}
