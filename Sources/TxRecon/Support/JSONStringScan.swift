// JSONStringScan: finds where a run of JSON string bytes that need no
// attention ends, eight bytes at a time.
//
// Inside a JSON string only four kinds of byte need a look when reading or
// writing one: the closing quote, a backslash, a control character (< 0x20)
// and the first byte of a multi-byte UTF-8 sequence (>= 0x80). Signed strings
// are kilobytes of base64 with none of them, and the parser and the writer
// spent a few percent of a JWS drain testing them one byte at a time.
// Reports: nothing.

enum JSONStringScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The first index from `start` on whose byte is `"`, `\`, below 0x20
    /// or at least 0x80; `bytes.count` when there is none.
    static func endOfPlainRun(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while index + 8 <= bytes.count, isPlain(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                index += 8
            }
        }
        while index < bytes.count, isPlain(bytes[index]) { index += 1 }
        return index
    }

    @inline(__always)
    static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    /// Whether none of the eight bytes of `word` needs a look. The tests
    /// are the classic "has a byte less than n" and "has a zero byte" word
    /// tricks: exact as a yes or no for the whole word, which is all that is
    /// asked (a word that fails is then read byte by byte).
    @inline(__always)
    static func isPlain(_ word: UInt64) -> Bool {
        let control = (word &- ones &* 0x20) & ~word
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let hasQuote = (quote &- ones) & ~quote
        let hasBackslash = (backslash &- ones) & ~backslash
        return (word | control | hasQuote | hasBackslash) & highBits == 0
    }
}
