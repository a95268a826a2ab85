// StderrLogSink: writes each log entry as one readable line to standard error
// (or another descriptor), for a terminal or a plain file when stderr is not
// the journal:
//
//     warning: item held (HTTP 409) TXRECON_ID=2000000123 TXRECON_HTTP_STATUS=409
//
// Control characters in the message and in field values are escaped, so an
// entry is always exactly one line; so are the characters beyond ASCII that
// the command line escapes (LogText's set: C1 controls, U+2028 and U+2029,
// the bidirectional marks, embeddings, overrides and isolates, as `\uNNNN`),
// for these lines are what `txrecon run`, `receive` or `sweep` in the
// foreground print on a terminal, and a key or a file name in them must not
// read backwards there. Each line leaves in one write(2) under a
// lock, so lines from different threads never interleave. A failed write is
// dropped silently: there is nowhere left to report it.
import Glibc
import Synchronization

/// Writes `<priority word>: <message> FIELD=value …` lines to a descriptor.
/// The descriptor is borrowed, never closed.
package final class StderrLogSink: LogSink {
    private let descriptor: Int32
    /// Serialises writes so that a line split by a short write is finished
    /// before another thread's line starts.
    private let writing = Mutex(())

    /// - Parameter descriptor: where lines go; default standard error (fd 2).
    package init(descriptor: Int32 = STDERR_FILENO) {
        self.descriptor = descriptor
    }

    package func write(_ entry: consuming LogEntry) {
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
    /// one), or nil when some text needs one. One pass: the line's length
    /// from each text's UTF-8 count, one allocation at that size, each text
    /// copied in and then checked where it landed (the escaped line is the
    /// rare case that pays for the wasted copy).
    private static func plainLine(for entry: LogEntry) -> [UInt8]? {
        let word = entry.priority.word
        let line = entry.fields.withUnsafeBufferPointer { fields in
            var length = word.utf8.count + 2 + entry.message.utf8.count + 1
            for index in fields.indices {
                length += 2 + fields[index].name.utf8.count + fields[index].value.utf8.count
            }
            return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
                var writer = PlainLineWriter(buffer)
                writer.put(word)
                writer.put(UInt8(ascii: ":"))
                writer.put(UInt8(ascii: " "))
                guard writer.putChecked(entry.message, inValue: false) else { return }
                for index in fields.indices {
                    writer.put(UInt8(ascii: " "))
                    writer.put(fields[index].name)
                    writer.put(UInt8(ascii: "="))
                    guard writer.putChecked(fields[index].value, inValue: true) else { return }
                }
                writer.put(UInt8(ascii: "\n"))
                initialized = writer.count
            }
        }
        // Never empty when whole: every line holds at least ": " and "\n".
        return line.isEmpty ? nil : line
    }

    /// Copies the pieces of a plain line into storage sized for them.
    private struct PlainLineWriter {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        private(set) var count = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func put(_ byte: UInt8) {
            buffer[count] = byte
            count += 1
        }

        mutating func put(_ text: String) {
            text.withUTF8Bytes { bytes in
                guard let source = bytes.baseAddress else { return }
                (buffer.baseAddress! + count).update(from: source, count: bytes.count)
                count += bytes.count
            }
        }

        /// Copies `text` and says whether it may stand in the line as it is
        /// (a field's value must also be non-empty).
        mutating func putChecked(_ text: String, inValue: Bool) -> Bool {
            let start = count
            put(text)
            let copied = UnsafeBufferPointer(rebasing: buffer[start..<count])
            return (!inValue || !copied.isEmpty) && StderrLogSink.isPlain(copied, inValue: inValue)
        }
    }

    /// Whether `bytes` go into a line as they are: no control character
    /// and no character LogText escapes beyond ASCII (nor, in a field's
    /// value, a blank, quote or backslash). Eight bytes at a time
    /// (ByteWord) through ASCII; a word with a byte beyond it is read byte
    /// by byte, and only a byte that may start an escaped character gets a
    /// closer look.
    private static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>, inValue: Bool) -> Bool {
        func wordNeedsLook(_ word: UInt64) -> Bool {
            ByteWord.has(word, byteBelow: 0x20) || ByteWord.has(word, byte: 0x7F) || ByteWord.hasHighByte(word)
        }
        func valueWordNeedsLook(_ word: UInt64) -> Bool {
            wordNeedsLook(word) || ByteWord.has(word, byte: UInt8(ascii: " ")) || ByteWord.has(word, byte: UInt8(ascii: "\""))
                || ByteWord.has(word, byte: UInt8(ascii: "\\"))
        }
        var index = 0
        while true {
            index = inValue
                ? ByteWord.firstIndex(in: bytes, from: index, word: valueWordNeedsLook,
                                      byte: { needsQuotes($0) || LogText.mayStartEscapedCharacter($0) })
                : ByteWord.firstIndex(in: bytes, from: index, word: wordNeedsLook,
                                      byte: { isControl($0) || LogText.mayStartEscapedCharacter($0) })
            if index == bytes.count { return true }
            // A lead byte of a character that controls nothing (U+00A0, "€").
            guard bytes[index] >= 0x80, LogText.escapedCharacter(in: bytes, at: index) == nil else { return false }
            index += 1
        }
    }

    /// Whether `bytes` hold a character LogText escapes beyond ASCII.
    private static func holdsEscapedCharacter(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.indices.contains { LogText.mayStartEscapedCharacter(bytes[$0]) && LogText.escapedCharacter(in: bytes, at: $0) != nil }
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
            if bytes.contains(where: isControl) || holdsEscapedCharacter(bytes) {
                append(bytes, quoting: false, to: &line)
            } else {
                line.append(contentsOf: bytes)
            }
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
                    if bytes.isEmpty || bytes.contains(where: needsQuotes) || holdsEscapedCharacter(bytes) {
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
    /// escaped, and each character LogText escapes beyond ASCII as
    /// `\uNNNN`, and, when `quoting`, inside quotes with `"` and `\`
    /// escaped too. In UTF-8 the first are single bytes below 0x80, never
    /// part of a longer sequence, and the others start with a byte
    /// LogText names, so the scan works on bytes.
    private static func append(_ bytes: UnsafeBufferPointer<UInt8>, quoting: Bool, to line: inout [UInt8]) {
        if quoting { line.append(UInt8(ascii: "\"")) }
        var runStart = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= 0x80 {
                guard let escaped = LogText.escapedCharacter(in: bytes, at: index) else {
                    index += 1
                    continue
                }
                line.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                line.append(contentsOf: Array(("\\u" + LogText.hex(escaped.value, digits: 4)).utf8))
                index += escaped.length
                runStart = index
                continue
            }
            let quoted = quoting && (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\"))
            index += 1
            guard quoted || isControl(byte) else { continue }
            line.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index - 1]))
            runStart = index
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
