// ByteWord: tests on eight bytes at once, for the scans that look for the
// few bytes that need attention in long runs of plain text (JSON strings,
// log lines).
//
// The classic word tricks: "has a zero byte" ((w - 0x01…) & ~w & 0x80…) and
// "has a byte less than n" ((w - n·0x01…) & ~w & 0x80…, for n ≤ 128) are
// exact as a yes or no for the whole word, which is all that is asked: a
// word that fails is then read byte by byte.
// Reports: nothing.

enum ByteWord {
    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Whether one of the eight bytes of `word` is `byte`.
    @inline(__always)
    static func has(_ word: UInt64, byte: UInt8) -> Bool {
        let match = word ^ (ones &* UInt64(byte))
        return (match &- ones) & ~match & highBits != 0
    }

    /// Whether one of the eight bytes of `word` is below `limit` (at most 128).
    @inline(__always)
    static func has(_ word: UInt64, byteBelow limit: UInt8) -> Bool {
        (word &- ones &* UInt64(limit)) & ~word & highBits != 0
    }

    /// Whether one of the eight bytes of `word` is 0x80 or above.
    @inline(__always)
    static func hasHighByte(_ word: UInt64) -> Bool {
        word & highBits != 0
    }
}
