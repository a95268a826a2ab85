// StderrLogSink: writes each log entry as one readable line to standard error
// (or another descriptor), for a terminal or a plain file when stderr is not
// the journal:
//
//     warning: item held (HTTP 409) TXRECON_ID=2000000123 TXRECON_HTTP_STATUS=409
//
// Control characters in the message and in field values are escaped, so an
// entry is always exactly one line. Each line leaves in one write(2) under a
// lock, so lines from different threads never interleave. A failed write is
// dropped silently: there is nowhere left to report it.
import Glibc
import Synchronization

/// Writes `<priority word>: <message> FIELD=value …` lines to a descriptor.
/// The descriptor is borrowed, never closed.
public final class StderrLogSink: LogSink {
    private let descriptor: Int32
    /// Serialises writes so that a line split by a short write is finished
    /// before another thread's line starts.
    private let writing = Mutex(())

    /// - Parameter descriptor: where lines go; default standard error (fd 2).
    public init(descriptor: Int32 = STDERR_FILENO) {
        self.descriptor = descriptor
    }

    public func write(_ entry: LogEntry) {
        let bytes = Array(Self.line(for: entry).utf8)
        writing.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { buffer in
                    Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                }
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    /// The line for `entry`, newline included. Field values that are empty or
    /// contain blanks, quotes, backslashes or control characters are quoted.
    static func line(for entry: LogEntry) -> String {  // internal for testing
        var line = entry.priority.word + ": " + escapingControlCharacters(entry.message)
        for field in entry.fields {
            line += " " + field.name + "=" + quotedIfNeeded(field.value)
        }
        return line + "\n"
    }

    private static func escapingControlCharacters(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { escaped($0) != nil }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            result += escaped(scalar) ?? String(scalar)
        }
        return result
    }

    private static func quotedIfNeeded(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "\\" || escaped($0) != nil
        }
        guard needsQuotes else { return value }
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            default: result += escaped(scalar) ?? String(scalar)
            }
        }
        return result + "\""
    }

    /// The escape for a C0 control character or DEL, nil for anything else.
    private static func escaped(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        case "\u{0}"..."\u{1F}", "\u{7F}":
            let hex = String(scalar.value, radix: 16)
            return "\\x" + (hex.count == 1 ? "0" + hex : hex)
        default: return nil
        }
    }
}

extension LogPriority {
    /// The syslog name of the priority, as a line prefix.
    var word: String {
        switch self {
        case .emergency: "emergency"
        case .alert: "alert"
        case .critical: "critical"
        case .error: "error"
        case .warning: "warning"
        case .notice: "notice"
        case .info: "info"
        case .debug: "debug"
        }
    }
}
