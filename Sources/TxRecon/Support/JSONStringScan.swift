// JSONStringScan: finds where a run of JSON string bytes that need no
// attention ends, sixteen bytes at a time.
//
// Inside a JSON string only four kinds of byte need a look when reading or
// writing one: the closing quote, a backslash, a control character (< 0x20)
// and the first byte of a multi-byte UTF-8 sequence (>= 0x80). Signed strings
// are kilobytes of base64 with none of them, read once by the parser and
// written once into each request body: the parser and the writer spent a few
// percent of a JWS drain testing them one byte at a time, and still about
// 20,000 instructions per verified JWS eight bytes at a time (ByteWord), where
// one SSE2 compare of sixteen bytes does the work of four word tests.
// Reports: nothing.

enum JSONStringScan {
    /// The first index from `start` on whose byte is `"`, `\`, below 0x20
    /// or at least 0x80; `bytes.count` when there is none.
    static func endOfPlainRun(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while index + 16 <= bytes.count, isPlain(raw.loadUnaligned(fromByteOffset: index, as: SIMD16<UInt8>.self)) {
                index += 16
            }
        }
        return ByteWord.firstIndex(in: bytes, from: index, word: { !isPlain($0) }, byte: { !isPlain($0) })
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

    /// Whether none of the sixteen bytes of `bytes` needs a look.
    @inline(__always)
    static func isPlain(_ bytes: SIMD16<UInt8>) -> Bool {
        // Read as signed, the bytes of 0x80 and above are negative: one
        // comparison finds them and the control characters. Written with
        // vector operands in this order, the compiler makes it the eight
        // SSE2 instructions it is; a scalar operand (`.< 0x20`), or the
        // comparison first, had it test lane by lane through the stack.
        let quotes = SIMD16<UInt8>(repeating: UInt8(ascii: "\"")), backslashes = SIMD16<UInt8>(repeating: 0x5C)
        let needsLook = (bytes .== quotes) .| (bytes .== backslashes)
            .| (SIMD16<Int8>(truncatingIfNeeded: bytes) .< SIMD16<Int8>(repeating: 0x20))
        // A mask's lanes are all ones or all zeros (SIMDMask stores them as
        // its SIMD16<Int8>): read as two words they are tested at once,
        // without the call `any(_:)` makes to reduce them lane by lane.
        let words = unsafeBitCast(needsLook, to: SIMD2<UInt64>.self)
        return words[0] | words[1] == 0
    }
}
