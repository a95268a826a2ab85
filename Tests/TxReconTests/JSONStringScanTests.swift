// The sixteen- and eight-bytes-at-a-time scans against the byte-at-a-time
// rule they replace.
import Testing
@testable import TxRecon

@Suite struct JSONStringScanTests {
    /// The rule, one byte at a time.
    static func needsALook(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    static func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }

    @Test func aWordWithOneByteThatNeedsALookIsNeverPlain() {
        for value in 0...255 {
            for position in 0..<8 {
                var bytes = [UInt8](repeating: UInt8(ascii: "A"), count: 8)
                bytes[position] = UInt8(value)
                #expect(JSONStringScan.isPlain(Self.word(bytes)) == !Self.needsALook(UInt8(value)),
                        "byte \(value) at \(position)")
            }
        }
    }

    @Test func randomWordsAgreeWithTheByteRule() {
        var generator = SystemRandomNumberGenerator()
        // Bytes near the edges of the rule, where borrows between bytes could mislead a word trick.
        let edges: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xFF, 0x41]
        for _ in 0..<20_000 {
            let bytes = (0..<8).map { _ in edges.randomElement(using: &generator)! }
            #expect(JSONStringScan.isPlain(Self.word(bytes)) == !bytes.contains(where: Self.needsALook), "\(bytes)")
        }
    }

    static func block(_ bytes: [UInt8]) -> SIMD16<UInt8> {
        bytes.withUnsafeBytes { $0.loadUnaligned(as: SIMD16<UInt8>.self) }
    }

    @Test func aBlockWithOneByteThatNeedsALookIsNeverPlain() {
        for value in 0...255 {
            for position in 0..<16 {
                var bytes = [UInt8](repeating: UInt8(ascii: "A"), count: 16)
                bytes[position] = UInt8(value)
                #expect(JSONStringScan.isPlain(Self.block(bytes)) == !Self.needsALook(UInt8(value)),
                        "byte \(value) at \(position)")
            }
        }
    }

    @Test func randomBlocksAgreeWithTheByteRule() {
        var generator = SystemRandomNumberGenerator()
        let edges: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xFF, 0x41]
        for _ in 0..<20_000 {
            let bytes = (0..<16).map { _ in edges.randomElement(using: &generator)! }
            #expect(JSONStringScan.isPlain(Self.block(bytes)) == !bytes.contains(where: Self.needsALook), "\(bytes)")
        }
    }

    @Test func theRunEndsAtTheFirstByteThatNeedsALookWherePlainBytesAreCounted() {
        for length in 0...40 {
            for position in 0...length {
                for special: UInt8 in [0x22, 0x5C, 0x0A, 0xC3] {
                    var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    if position < length { bytes[position] = special }
                    for start in [0, min(3, length)] where start <= position {
                        let end = bytes.withUnsafeBufferPointer { JSONStringScan.endOfPlainRun(in: $0, from: start) }
                        #expect(end == position, "length \(length), special \(special) at \(position), from \(start)")
                    }
                }
            }
        }
    }

    @Test func stringsRoundTripWithSpecialBytesAtEveryOffset() throws {
        for length in 0...24 {
            for position in 0..<max(length, 1) {
                for special in ["\"", "\\", "\n", "\u{1}", "é", "€", "😀"] {
                    var characters = Array(repeating: "b", count: length)
                    if length > 0 { characters[position] = special }
                    let text = characters.joined()
                    let serialized = JSONValue.string(text).serializedString
                    #expect(try JSONValue.parse(serialized) == .string(text), "\(serialized)")
                }
            }
        }
    }
}
