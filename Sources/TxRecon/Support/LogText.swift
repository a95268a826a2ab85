// LogText: making untrusted text (file names, backend bodies) safe to put on
// one log line or in a reason file: control characters never reach a
// terminal or split a line.

enum LogText {
    /// The text with control characters (newlines included) and backslashes
    /// written as `\n`, `\t`, `\xNN`, `\\`.
    static func escaped(_ text: String) -> String {
        // Most text (keys, file names, reasons) needs nothing: check the
        // bytes once and hand the same string back.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "\\") }) { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
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
}
