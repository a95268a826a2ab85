// LogEntry and LogSink: one structured log event and where it goes. The
// journal sink writes native entries (MESSAGE, PRIORITY, MESSAGE_ID and
// TXRECON_* fields); the stderr sink writes one readable line per entry.
// Callers never put a signed payload, a token or a secret in an entry.

/// syslog priorities, as the journal's PRIORITY field takes them.
package enum LogPriority: Int, Sendable, Comparable {
    case emergency = 0, alert, critical, error, warning, notice, info, debug

    package static func < (lhs: LogPriority, rhs: LogPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One event for the operator: a message and structured fields.
package struct LogEntry: Sendable, Equatable {
    package var priority: LogPriority
    /// One line, human-readable, no trailing newline.
    package var message: String
    /// A fixed 128-bit id (32 lowercase hex digits) per kind of event, so
    /// `journalctl MESSAGE_ID=…` and the catalog find it; nil for ad-hoc lines.
    package var messageID: String?
    /// Journal field names (upper case, `TXRECON_` prefixed) and values.
    package var fields: [(name: String, value: String)]

    package init(_ priority: LogPriority, _ message: String, messageID: String? = nil,
                fields: [(name: String, value: String)] = []) {
        self.priority = priority
        self.message = message
        self.messageID = messageID
        self.fields = fields
    }

    package func field(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    package static func == (lhs: LogEntry, rhs: LogEntry) -> Bool {
        lhs.priority == rhs.priority && lhs.message == rhs.message && lhs.messageID == rhs.messageID
            && lhs.fields.map(\.name) == rhs.fields.map(\.name) && lhs.fields.map(\.value) == rhs.fields.map(\.value)
    }
}

/// Where log entries go. `write` must not block for long and is called from
/// any thread or task. It takes the entry (`consuming`): a sink that wraps
/// another adds its field or redacts in place and hands the same storage
/// on, where a borrowed entry would be copied at each step (a delivered
/// item's line passes three sinks).
package protocol LogSink: Sendable {
    func write(_ entry: consuming LogEntry)
}
