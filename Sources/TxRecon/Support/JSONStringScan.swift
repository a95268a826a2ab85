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
    /// The first index from `start` on whose byte is `"`, `\`, below 0x20
    /// or at least 0x80; `bytes.count` when there is none.
    static func endOfPlainRun(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        ByteWord.firstIndex(in: bytes, from: start, word: { !isPlain($0) }, byte: { !isPlain($0) })
    }

    @inline(__always)
    static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    /// Whether none of the eight bytes of `word` needs a look (ByteWord).
    @inline(__always)
    static func isPlain(_ word: UInt64) -> Bool {
        !ByteWord.hasHighByte(word) && !ByteWord.has(word, byteBelow: 0x20)
            && !ByteWord.has(word, byte: UInt8(ascii: "\"")) && !ByteWord.has(word, byte: UInt8(ascii: "\\"))
    }
}
