// LogText: what escaping leaves of text a producer or a backend wrote.
import Testing
@testable import TxRecon

@Suite struct LogTextTests {
    @Test func c0ControlsDELAndBackslashesAreEscapedInBashQuotingForms() {
        #expect(LogText.escaped("a\u{1B}]0;pwned\u{07}\u{1B}[2J\n<forged line>\r\t\u{7F}\\")
            == #"a\x1b]0;pwned\x07\x1b[2J\n<forged line>\r\t\x7f\\"#)
    }

    @Test func c1ControlsAndTheUnicodeLineSeparatorsAreEscaped() {
        #expect(LogText.escaped("a\u{9B}2J\u{85}b\u{2028}c\u{2029}d\u{80}\u{9F}")
            == #"a\u009b2J\u0085b\u2028c\u2029d\u0080\u009f"#)
    }

    @Test func bidirectionalControlsAreEscapedSoNothingReadsBackwards() {
        // "refund" with an override that would show the rest reversed.
        #expect(LogText.escaped("key\u{202E}dnufer\u{202C} \u{2066}x\u{2069}\u{200F}\u{061C}")
            == #"key\u202ednufer\u202c \u2066x\u2069\u200f\u061c"#)
        #expect(LogText.escaped("\u{202A}\u{202B}\u{202D}\u{2067}\u{2068}\u{200E}")
            == #"\u202a\u202b\u202d\u2067\u2068\u200e"#)
    }

    @Test func textBeyondASCIIThatControlsNothingPassesUnchanged() {
        for text in ["Überweisung für 東京", "\u{A0}non-breaking", "€ and — and ‘quotes’", "2000000123456789",
                     "عربي مرحبا", "\u{2010}hyphen\u{2030}"] {
            #expect(LogText.escaped(text) == text)
        }
    }
}
