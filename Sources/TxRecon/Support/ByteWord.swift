// ByteWord: tests on eight bytes at once, and the scan built on them, for
// finding the few bytes that need attention in long runs of plain text
// (JSON strings, log lines, header values).
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

    /// The first index from `start` on whose byte `byteNeedsLook`, or
    /// `bytes.count` when there is none. Eight bytes at a time while
    /// `wordNeedsLook` (true of every word holding such a byte) is false,
    /// then byte by byte.
    @inline(__always)
    static func firstIndex(in bytes: UnsafeBufferPointer<UInt8>, from start: Int = 0,
                           word wordNeedsLook: (UInt64) -> Bool, byte byteNeedsLook: (UInt8) -> Bool) -> Int {
        var index = start
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while index + 8 <= bytes.count, !wordNeedsLook(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                index += 8
            }
        }
        while index < bytes.count, !byteNeedsLook(bytes[index]) { index += 1 }
        return index
    }
}
