// TerminalText: the command line's lines and JSON, safe for a terminal.
import Testing
@testable import TxRecon

@Suite struct TerminalTextTests {
    @Test func aLineHasItsControlsEscapedAndItsBackslashesKept() {
        #expect(TerminalText.line("a\u{1B}[2J\n<forged>\u{9B}\u{2028} HTTP 422: \\x07 as the daemon wrote it")
            == #"a\x1b[2J\n<forged>\u009b\u2028 HTTP 422: \x07 as the daemon wrote it"#)
    }

    @Test func jsonCarriesDELC1LineSeparatorsAndBidiControlsAsEscapesAndParsesToTheSameValue() throws {
        let value = JSONValue.object([("name", .string("a\u{1B}\u{7F}\u{85}\u{9B}\u{2028}\u{2029}é\"\\\u{202E}\u{2067}\u{061C}"))])
        let text = TerminalText.json(value)
        #expect(text == #"{"name":"a\u001b\u007f\u0085\u009b\u2028\u2029é\"\\\u202e\u2067\u061c"}"#)
        #expect(try JSONValue.parse(text) == value)
    }

    @Test func jsonWithoutSuchCharactersIsTheSerializersOwn() {
        let value = JSONValue.array([.string("Überweisung für 東京"), .integer(3), .null])
        #expect(TerminalText.json(value) == value.serializedString)
    }
}
