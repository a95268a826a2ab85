// LogText: making untrusted text (file names, backend bodies) safe to put on
// one log line, in a reason file or on a terminal: control characters never
// reach a terminal or split a line.

enum LogText {
    /// The text with control characters (newlines included) written as `\n`,
    /// `\r`, `\t`, `\xNN` (C0 and DEL) and `\uNNNN` (C1, and the line and
    /// paragraph separators U+2028 and U+2029), and backslashes as `\\`
    /// unless `keepingBackslashes`. These are the forms of bash's `$'…'`
    /// quoting, so a name escaped with its backslashes can be typed back as
    /// `$'name'`. C1 controls are escaped with the C0 ones because some
    /// terminals act on them (U+009B is CSI, as ESC [ is), the separators
    /// because some viewers start a line at them.
    ///
    /// `keepingBackslashes` is for text shown to a person that may already
    /// have been escaped once (a reason file, a status line): doubling its
    /// backslashes would only make it unreadable, and a backslash moves no
    /// cursor.
    static func escaped(_ text: String, keepingBackslashes: Bool = false) -> String {
        // Most text (keys, file names, reasons) needs nothing: check the
        // bytes once and hand the same string back. In UTF-8 every C1
        // control starts with 0xC2 and U+2028 and U+2029 with 0xE2; other
        // text beyond ASCII passes without a closer look.
        let plain = text.utf8.allSatisfy { byte in
            byte < 0x80 ? byte >= 0x20 && byte != 0x7F && (keepingBackslashes || byte != UInt8(ascii: "\\"))
                : byte != 0xC2 && byte != 0xE2
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
            case _ where (0x80...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029:
                result += "\\u" + hex(scalar.value, digits: 4)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// One line of at most `limit` characters, escaped.
    static func singleLine(_ text: String, limit: Int = 600) -> String {
        let line = escaped(text)
        return line.count > limit ? String(line.prefix(limit)) + "…" : line
    }

    /// `value` in lowercase hexadecimal, zero-padded to `digits`.
    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
