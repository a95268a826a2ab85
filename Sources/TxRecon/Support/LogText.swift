// LogText: making untrusted text (file names, backend bodies) safe to put on
// one log line, in a reason file or on a terminal: control characters never
// reach a terminal or split a line.

enum LogText {
    /// The text with control characters (newlines included) written as `\n`,
    /// `\r`, `\t`, `\xNN` (C0 and DEL) and `\uNNNN` (C1, the line and
    /// paragraph separators U+2028 and U+2029, and the bidirectional
    /// controls), and backslashes as `\\` unless `keepingBackslashes`. These
    /// are the forms of bash's `$'…'` quoting, so a name escaped with its
    /// backslashes can be typed back as `$'name'`. C1 controls are escaped
    /// with the C0 ones because some terminals act on them (U+009B is CSI, as
    /// ESC [ is), the separators because some viewers start a line at them,
    /// the bidirectional marks, embeddings, overrides and isolates because
    /// they reorder what follows them on screen: a key could make a reason
    /// read backwards, or hide part of a line behind another.
    ///
    /// `keepingBackslashes` is for text shown to a person that may already
    /// have been escaped once (a reason file, a status line): doubling its
    /// backslashes would only make it unreadable, and a backslash moves no
    /// cursor.
    static func escaped(_ text: String, keepingBackslashes: Bool = false) -> String {
        // Most text (keys, file names, reasons) needs nothing: check the
        // bytes once and hand the same string back. In UTF-8 every C1
        // control starts with 0xC2, the Arabic letter mark U+061C with 0xD8,
        // and the separators and the other bidirectional controls with
        // 0xE2; other text beyond ASCII passes without a closer look.
        // In place (StringBytes): through the UTF8View's iterator this was
        // a tenth of the delivered entry's cost.
        let plain = text.withUTF8Bytes { bytes in
            bytes.allSatisfy { byte in
                byte < 0x80 ? byte >= 0x20 && byte != 0x7F && (keepingBackslashes || byte != UInt8(ascii: "\\"))
                    : !mayStartEscapedCharacter(byte)
            }
        }
        if plain { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += keepingBackslashes ? "\\" : "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: result += "\\x" + hex(scalar.value, digits: 2)
            case _ where isEscapedBeyondASCII(scalar.value): result += "\\u" + hex(scalar.value, digits: 4)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Whether the character `value`, beyond ASCII, is written `\uNNNN`:
    /// C1 controls, U+2028 and U+2029, and Unicode's bidirectional
    /// formatting characters (UAX #9): the marks U+061C, U+200E and U+200F,
    /// the embeddings and overrides U+202A to U+202E, the isolates U+2066
    /// to U+2069.
    static func isEscapedBeyondASCII(_ value: UInt32) -> Bool {
        (0x80...0x9F).contains(value) || value == 0x2028 || value == 0x2029 || value == 0x061C || value == 0x200E
            || value == 0x200F || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
    }

    /// Whether a UTF-8 byte may start a character `isEscapedBeyondASCII`
    /// names (0xC2, 0xD8, 0xE2), so that other text is passed at a glance.
    static func mayStartEscapedCharacter(_ byte: UInt8) -> Bool {
        byte == 0xC2 || byte == 0xD8 || byte == 0xE2
    }

    /// The character `isEscapedBeyondASCII` names whose UTF-8 starts at
    /// `index` of `bytes`, and its length in bytes (2 or 3); nil when
    /// none starts there. For writers that work on bytes (StderrLogSink):
    /// every such character is two or three bytes long and starts with one
    /// of the bytes `mayStartEscapedCharacter` names.
    static func escapedCharacter(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (value: UInt32, length: Int)? {
        let lead = bytes[index]
        guard mayStartEscapedCharacter(lead), index + 1 < bytes.count else { return nil }
        let second = UInt32(bytes[index + 1] & 0x3F)
        if lead < 0xE0 {
            let value = UInt32(lead & 0x1F) << 6 | second
            return isEscapedBeyondASCII(value) ? (value, 2) : nil
        }
        guard index + 2 < bytes.count else { return nil }
        let value = UInt32(lead & 0x0F) << 12 | second << 6 | UInt32(bytes[index + 2] & 0x3F)
        return isEscapedBeyondASCII(value) ? (value, 3) : nil
    }

    /// One line of at most `limit` characters, escaped.
    static func singleLine(_ text: String, limit: Int = 600) -> String {
        let line = escaped(text)
        return line.count > limit ? String(line.prefix(limit)) + "…" : line
    }

    /// `value` in lowercase hexadecimal, zero-padded to `digits`.
    static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
