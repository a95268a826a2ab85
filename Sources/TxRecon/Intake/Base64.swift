// Base64: decoding of standard base64 (RFC 4648 §4), the encoding an app
// gives its receipt (`Data.base64EncodedString()`, `base64 -w76`).
//
// The standard alphabet only, `=` padding only at the end, and line breaks
// (CR, LF) skipped, as the MIME form has them; any other byte is refused, so
// that text that merely contains base64 is not taken for it. Pure.

enum Base64 {
    /// The bytes `text` encodes, or nil when it is not standard base64.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.count / 4 * 3)
        var group: UInt32 = 0
        var count = 0
        var padding = 0
        for byte in text {
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { continue }
            if byte == UInt8(ascii: "=") {
                padding += 1
                guard padding <= 2 else { return nil }
                continue
            }
            guard padding == 0, let value = value(of: byte) else { return nil }
            group = group << 6 | UInt32(value)
            count += 1
            if count == 4 {
                output.append(UInt8(truncatingIfNeeded: group >> 16))
                output.append(UInt8(truncatingIfNeeded: group >> 8))
                output.append(UInt8(truncatingIfNeeded: group))
                group = 0
                count = 0
            }
        }
        switch count {
        case 0: guard padding == 0 else { return nil }
        case 2:
            guard padding == 0 || padding == 2, group & 0xF == 0 else { return nil }
            output.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            guard padding <= 1, group & 0x3 == 0 else { return nil }
            output += [UInt8(truncatingIfNeeded: group >> 10), UInt8(truncatingIfNeeded: group >> 2)]
        default: return nil
        }
        return output
    }

    private static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
