// Output: the only way the command line writes. Keys, file names, reasons
// and status lines come from producers, the backend and spool files, so
// every line goes out through TerminalText with its control characters
// escaped, and JSON with them as \u escapes. Plain `print` is unavailable in
// this module: a new output cannot forget the escaping (Swift.print is the
// way around it, used here alone).
import Glibc
import TxRecon

/// Writes one line for people to standard output; control characters in
/// it, a line break included, are escaped.
func printLine(_ line: String) {
    Swift.print(TerminalText.line(line))
}

/// Writes one line to standard error, escaped as `printLine` does;
/// unbuffered, so it is never lost at exit.
func printError(_ line: String) {
    let bytes = Array((TerminalText.line(line) + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// Writes the program's own text of several lines (usage, help) to standard
/// output, or standard error, each line as `printLine` or `printError`
/// writes it. Not for text from outside: its line breaks would count.
func printText(_ text: String, toStandardError: Bool = false) {
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        toStandardError ? printError(String(line)) : printLine(String(line))
    }
}

/// Writes `value` to standard output as one line of JSON (TerminalText.json).
func printJSON(_ value: JSONValue) {
    Swift.print(TerminalText.json(value))
}

@available(*, unavailable, message: "print with printLine, printText or printJSON, which escape control characters")
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {}
