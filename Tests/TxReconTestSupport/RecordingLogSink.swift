// RecordingLogSink: a LogSink for unit tests that keeps every entry in memory
// so a test can assert what was logged. Safe to write from any thread.
import Synchronization
import TxRecon

/// Keeps the entries written to it, in order.
package final class RecordingLogSink: LogSink {
    private let recorded = Mutex<[LogEntry]>([])

    package init() {}

    package func write(_ entry: consuming LogEntry) {
        let kept = entry
        recorded.withLock { $0.append(kept) }
    }

    /// Every entry so far, oldest first.
    package var entries: [LogEntry] { recorded.withLock { $0 } }

    /// The entries logged with `messageID` (one of `MessageID`'s constants).
    package func entries(withMessageID messageID: String) -> [LogEntry] {
        entries.filter { $0.messageID == messageID }
    }
}
