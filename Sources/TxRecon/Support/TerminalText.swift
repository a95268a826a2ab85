// TerminalText: what the txrecon command line prints, made safe for a
// terminal. Keys, file names, reasons and status lines come from producers,
// the backend and files in the spool; an escape sequence in any of them
// could clear the screen or retitle the terminal, and a line break could
// forge a line of `txrecon list`. Public for the executable, which prints
// through nothing else (see its Output.swift).

package enum TerminalText {
    /// `text` as one line for people: control characters escaped as the
    /// journal lines have them (`\x1b`, `\n`, `\u009b`; see LogText), so it
    /// can neither drive the terminal nor start a line of its own.
    /// Backslashes are kept: a reason file or a status line was escaped once
    /// already by the daemon, and shows as it is written.
    package static func line(_ text: String) -> String {
        LogText.escaped(text, keepingBackslashes: true)
    }

    /// `value` as one line of JSON. The serializer writes C0 controls as
    /// `\u` escapes, as JSON requires; DEL, C1 controls, U+2028/U+2029 and
    /// the bidirectional controls, which JSON allows raw, become `\u`
    /// escapes here as well (LogText's set), so a document on a terminal is
    /// as harmless as the text output and parses to the same values.
    /// Outside strings the serializer writes ASCII only, so any such
    /// character stands inside a string.
    package static func json(_ value: JSONValue) -> String {
        let text = value.serializedString
        guard text.utf8.contains(where: { $0 == 0x7F || LogText.mayStartEscapedCharacter($0) }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            if scalar.value == 0x7F || LogText.isEscapedBeyondASCII(scalar.value) {
                result += "\\u" + LogText.hex(scalar.value, digits: 4)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
