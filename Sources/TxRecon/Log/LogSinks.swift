// LogSinks: picks where the daemon's log entries go. systemd connects a
// service's stderr to the journal and says so in JOURNAL_STREAM
// ("<device>:<inode>" of that stream, both decimal); only when that matches
// fstat(2) of our stderr do we write native journal entries. Otherwise (a
// terminal, a file, a pipe, or a JOURNAL_STREAM inherited from a parent whose
// stderr we no longer share) plain lines go to stderr. Reports nothing.
import Glibc

/// Chooses the production log sink.
package enum LogSinks {
    /// The journal sink when `standardError` is the stream named by
    /// `JOURNAL_STREAM` in `environment`, else a line sink on `standardError`.
    ///
    /// - Parameters:
    ///   - environment: the process environment (tests pass their own).
    ///   - standardError: the descriptor to check and write lines to;
    ///     default fd 2.
    package static func standard(environment: [String: String],
                                standardError: Int32 = STDERR_FILENO) -> any LogSink {
        let lines = StderrLogSink(descriptor: standardError)
        guard let stream = environment["JOURNAL_STREAM"],
              isJournalStream(stream, descriptor: standardError)
        else { return lines }
        return JournalLogSink(fallback: lines)
    }

    /// Whether `descriptor` is the device and inode that `journalStream`
    /// ("<dev>:<ino>") names. A malformed value never matches.
    static func isJournalStream(_ journalStream: String, descriptor: Int32) -> Bool {  // internal for testing
        let parts = journalStream.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
              let device = UInt64(parts[0]), let inode = UInt64(parts[1])
        else { return false }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
