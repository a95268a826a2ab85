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

    public func write(_ entry: consuming LogEntry) {
        let bytes = Self.line(for: entry)
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
    /// Built as bytes, from each text's own bytes where it needs no escape:
    /// the daemon writes one of these per delivered item.
    static func line(for entry: LogEntry) -> [UInt8] {  // internal for testing
        plainLine(for: entry) ?? escapedLine(for: entry)
    }

    /// The line of an entry that needs no quote or escape (nearly every
    /// one): measured, allocated at its size and copied in, piece by piece.
    /// nil when some text needs one.
    private static func plainLine(for entry: LogEntry) -> [UInt8]? {
        let word = entry.priority.word
        guard let messageLength = entry.message.withUTF8Bytes({ isPlain($0, inValue: false) ? $0.count : nil })
        else { return nil }
        var length = word.utf8.count + 2 + messageLength + 1
        let plainFields = entry.fields.withUnsafeBufferPointer { fields in
            fields.allSatisfy { field in
                guard let valueLength = field.value.withUTF8Bytes({ !$0.isEmpty && isPlain($0, inValue: true) ? $0.count : nil })
                else { return false }
                length += 2 + field.name.utf8.count + valueLength
                return true
            }
        }
        guard plainFields else { return nil }
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            var cursor = buffer.baseAddress!
            func put(_ bytes: UnsafeBufferPointer<UInt8>) {
                guard let base = bytes.baseAddress else { return }
                cursor.update(from: base, count: bytes.count)
                cursor += bytes.count
            }
            func put(_ byte: UInt8) {
                cursor.initialize(to: byte)
                cursor += 1
            }
            word.withUTF8Bytes { put($0) }
            put(UInt8(ascii: ":"))
            put(UInt8(ascii: " "))
            entry.message.withUTF8Bytes { put($0) }
            entry.fields.withUnsafeBufferPointer { fields in
                for index in fields.indices {
                    put(UInt8(ascii: " "))
                    fields[index].name.withUTF8Bytes { put($0) }
                    put(UInt8(ascii: "="))
                    fields[index].value.withUTF8Bytes { put($0) }
                }
            }
            put(UInt8(ascii: "\n"))
            initialized = length
        }
    }

    /// Whether `bytes` go into a line as they are: no control character
    /// (nor, in a field's value, a blank, quote or backslash). Eight bytes
    /// at a time (ByteWord).
    private static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>, inValue: Bool) -> Bool {
        func hasControl(_ word: UInt64) -> Bool { ByteWord.has(word, byteBelow: 0x20) || ByteWord.has(word, byte: 0x7F) }
        guard inValue else { return ByteWord.firstIndex(in: bytes, word: hasControl, byte: isControl) == bytes.count }
        return ByteWord.firstIndex(in: bytes, word: { word in
            hasControl(word) || ByteWord.has(word, byte: UInt8(ascii: " ")) || ByteWord.has(word, byte: UInt8(ascii: "\""))
                || ByteWord.has(word, byte: UInt8(ascii: "\\"))
        }, byte: needsQuotes) == bytes.count
    }

    /// The line of an entry some of whose text is quoted or escaped; right
    /// for any entry (internal for testing: the plain path must agree).
    static func escapedLine(for entry: LogEntry) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(entry.message.utf8.count + entry.fields.count * 32 + 16)
        entry.priority.word.withUTF8Bytes { line.append(contentsOf: $0) }
        line.append(UInt8(ascii: ":"))
        line.append(UInt8(ascii: " "))
        entry.message.withUTF8Bytes { bytes in
            if bytes.contains(where: isControl) { append(bytes, quoting: false, to: &line) } else { line.append(contentsOf: bytes) }
        }
        // Through the buffer: a field read in place, not copied out of the
        // array (two strings retained and released) for each one.
        entry.fields.withUnsafeBufferPointer { fields in
            for index in fields.indices {
                line.append(UInt8(ascii: " "))
                fields[index].name.withUTF8Bytes { line.append(contentsOf: $0) }
                line.append(UInt8(ascii: "="))
                fields[index].value.withUTF8Bytes { bytes in
                    // Nearly every value needs neither quotes nor escapes: one
                    // scan, then the bytes as they are.
                    if bytes.isEmpty || bytes.contains(where: needsQuotes) {
                        append(bytes, quoting: true, to: &line)
                    } else {
                        line.append(contentsOf: bytes)
                    }
                }
            }
        }
        line.append(UInt8(ascii: "\n"))
        return line
    }

    /// Whether a value holding `byte` is written in quotes.
    private static func needsQuotes(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || isControl(byte)
    }

    /// Appends `bytes` (UTF-8) with every C0 control character and DEL
    /// escaped and, when `quoting`, inside quotes with `"` and `\` escaped
    /// too. In UTF-8 these are single bytes below 0x80, never part of a
    /// longer sequence, so the scan works on bytes.
    private static func append(_ bytes: UnsafeBufferPointer<UInt8>, quoting: Bool, to line: inout [UInt8]) {
        if quoting { line.append(UInt8(ascii: "\"")) }
        var runStart = 0
        for index in bytes.indices {
            let byte = bytes[index]
            let quoted = quoting && (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\"))
            guard quoted || isControl(byte) else { continue }
            line.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            runStart = index + 1
            appendEscape(of: byte, to: &line)
        }
        line.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        if quoting { line.append(UInt8(ascii: "\"")) }
    }

    private static func isControl(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F
    }

    /// `\n`, `\r`, `\t`, `\"`, `\\`, or `\xHH` (lowercase) for other control bytes.
    private static func appendEscape(of byte: UInt8, to line: inout [UInt8]) {
        let backslash = UInt8(ascii: "\\")
        switch byte {
        case 0x0A: line.append(contentsOf: [backslash, UInt8(ascii: "n")])
        case 0x0D: line.append(contentsOf: [backslash, UInt8(ascii: "r")])
        case 0x09: line.append(contentsOf: [backslash, UInt8(ascii: "t")])
        case UInt8(ascii: "\""), backslash: line.append(contentsOf: [backslash, byte])
        default:
            let digits = Array("0123456789abcdef".utf8)
            line.append(contentsOf: [backslash, UInt8(ascii: "x"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
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
