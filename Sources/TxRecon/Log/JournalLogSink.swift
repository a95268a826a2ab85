// JournalLogSink: writes each log entry as a native journal entry through
// sd_journal_sendv(3): MESSAGE, PRIORITY, MESSAGE_ID when set,
// SYSLOG_IDENTIFIER=txrecon and every TXRECON_* field of the entry. Values
// travel with their lengths, so newlines and any other bytes arrive intact.
// When journald cannot be reached (sd_journal_sendv returns an error) the
// entry goes to the fallback sink instead, so it is not lost.
import CSystemd
import Glibc

/// Sends entries to journald's native socket. Field names must be valid
/// journal names (upper-case letters, digits, underscores, `TXRECON_`
/// prefixed); journald drops a field whose name is not.
package struct JournalLogSink: LogSink {
    private let fallback: any LogSink

    /// - Parameter fallback: takes entries journald refused; by default a
    ///   line on standard error (which systemd connects to the journal too).
    package init(fallback: any LogSink = StderrLogSink()) {
        self.fallback = fallback
    }

    package func write(_ entry: consuming LogEntry) {
        if Self.send(Self.assignments(for: entry)) < 0 {
            fallback.write(entry)
        }
    }

    /// The `NAME=value` assignments of one entry, in the order sent.
    static func assignments(for entry: LogEntry) -> [[UInt8]] {  // internal for testing
        var assignments: [[UInt8]] = [
            Array("MESSAGE=\(entry.message)".utf8),
            Array("PRIORITY=\(entry.priority.rawValue)".utf8),
        ]
        if let messageID = entry.messageID {
            assignments.append(Array("MESSAGE_ID=\(messageID)".utf8))
        }
        assignments.append(Array("SYSLOG_IDENTIFIER=txrecon".utf8))
        for field in entry.fields {
            assignments.append(Array("\(field.name)=\(field.value)".utf8))
        }
        return assignments
    }

    /// Hands the assignments to sd_journal_sendv in one call; returns its
    /// result (0, or a negative errno).
    private static func send(_ assignments: [[UInt8]]) -> Int32 {
        // One contiguous buffer keeps every iovec's base pointer valid for
        // the duration of the call.
        let joined = assignments.flatMap { $0 }
        return joined.withUnsafeBytes { buffer -> Int32 in
            var vectors: [iovec] = []
            vectors.reserveCapacity(assignments.count)
            var offset = 0
            for assignment in assignments {
                let base = UnsafeMutableRawPointer(mutating: buffer.baseAddress.map { $0 + offset })
                vectors.append(iovec(iov_base: base, iov_len: assignment.count))
                offset += assignment.count
            }
            return sd_journal_sendv(vectors, Int32(vectors.count))
        }
    }
}
