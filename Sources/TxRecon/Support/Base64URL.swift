// Base64URL: decoding of unpadded base64url (RFC 4648 §5), the encoding of
// every compact JWS segment, and encoding for the tokens `txrecon sweep`
// signs.
//
// Strict on purpose, because a signature covers the encoded text and not the
// decoded bytes: padding, the standard alphabet ('+', '/'), whitespace and
// non-canonical endings are refused, so that one byte sequence has exactly
// one accepted spelling. Pure and allocation-light (it runs for every
// segment of every dropped file); failures are thrown as `Base64URLError`
// with the offending byte's offset; nothing is logged.

/// Why a byte run is not canonical unpadded base64url. Offsets count bytes
/// from the start of the decoded run.
enum Base64URLError: Error, Sendable, Equatable {
    /// A `=` at `offset`: compact JWS segments carry no padding.
    case padding(offset: Int)
    /// `+` or `/` at `offset`: the standard base64 alphabet, not base64url.
    case standardAlphabet(byte: UInt8, offset: Int)
    /// A space, tab, CR or LF at `offset`.
    case whitespace(byte: UInt8, offset: Int)
    /// Any other byte outside the base64url alphabet.
    case invalidByte(byte: UInt8, offset: Int)
    /// A length of 4n+1 characters, which no byte sequence encodes to.
    case truncated(length: Int)
    /// The last character carries bits beyond the data: a conforming encoder
    /// never writes this spelling.
    case nonCanonicalEnd
}

enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` as canonical unpadded base64url.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index < input.count {
            let remaining = input.count - index
            let group = UInt32(input[index]) << 16
                | (remaining > 1 ? UInt32(input[index + 1]) << 8 : 0)
                | (remaining > 2 ? UInt32(input[index + 2]) : 0)
            // One byte makes two characters, two make three, three make four.
            for position in 0..<(min(remaining, 3) + 1) {
                output.append(alphabet[Int(group >> UInt32(18 - 6 * position)) & 0x3F])
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The number of bytes `encodedCount` unpadded characters decode to
    /// (rounded down for the impossible length 4n+1), so that size limits can
    /// be enforced before anything is decoded.
    static func decodedCount(ofEncodedCount encodedCount: Int) -> Int {
        encodedCount / 4 * 3 + max(0, encodedCount % 4 - 1)
    }

    /// Decodes `encoded`, which must be canonical unpadded base64url.
    static func decode(_ encoded: UnsafeBufferPointer<UInt8>) throws(Base64URLError) -> [UInt8] {
        let count = encoded.count
        let tail = count % 4
        guard tail != 1 else {
            // Report a stray byte before a length problem: it is the likelier cause.
            try diagnose(encoded)
            throw .truncated(length: count)
        }
        var invalid: UInt8 = 0
        let decoded = [UInt8](unsafeUninitializedCapacity: decodedCount(ofEncodedCount: count)) { output, written in
            sextets.withUnsafeBufferPointer { table in
                var input = 0
                var out = 0
                let whole = count - tail
                while input < whole {
                    let a = table[Int(encoded[input])], b = table[Int(encoded[input + 1])]
                    let c = table[Int(encoded[input + 2])], d = table[Int(encoded[input + 3])]
                    invalid |= a | b | c | d
                    output[out] = a << 2 | b >> 4
                    output[out + 1] = b << 4 | c >> 2
                    output[out + 2] = c << 6 | d
                    input += 4
                    out += 3
                }
                if tail >= 2 {
                    let a = table[Int(encoded[input])], b = table[Int(encoded[input + 1])]
                    invalid |= a | b
                    output[out] = a << 2 | b >> 4
                    out += 1
                    if tail == 3 {
                        let c = table[Int(encoded[input + 2])]
                        invalid |= c
                        output[out] = b << 4 | c >> 2
                        out += 1
                        // The last character's low 2 bits lie beyond the data.
                        if c & 0x03 != 0 { invalid |= canonicalFlag }
                    } else if b & 0x0F != 0 {
                        // The last character's low 4 bits lie beyond the data.
                        invalid |= canonicalFlag
                    }
                }
                written = out
            }
        }
        if invalid & invalidFlag != 0 { try diagnose(encoded) }
        if invalid & canonicalFlag != 0 { throw .nonCanonicalEnd }
        return decoded
    }

    /// The slow path once a bad byte was seen: find the first one and name it.
    private static func diagnose(_ encoded: UnsafeBufferPointer<UInt8>) throws(Base64URLError) {
        for (offset, byte) in encoded.enumerated() where sextets[Int(byte)] & invalidFlag != 0 {
            switch byte {
            case UInt8(ascii: "="): throw .padding(offset: offset)
            case UInt8(ascii: "+"), UInt8(ascii: "/"): throw .standardAlphabet(byte: byte, offset: offset)
            case 0x20, 0x09, 0x0D, 0x0A: throw .whitespace(byte: byte, offset: offset)
            default: throw .invalidByte(byte: byte, offset: offset)
            }
        }
    }

    /// Whether `byte` is one of the base64url alphabet's 64.
    static func isAlphabet(_ byte: UInt8) -> Bool { sextets[Int(byte)] & invalidFlag == 0 }

    /// Set in a table entry for a byte outside the alphabet; valid entries are 0…63.
    private static let invalidFlag: UInt8 = 0x80
    /// Marks a non-canonical ending in the accumulated flags (never in the table).
    private static let canonicalFlag: UInt8 = 0x40

    /// The 6-bit value of each byte, or `invalidFlag`.
    private static let sextets: [UInt8] = {
        var table = [UInt8](repeating: invalidFlag, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()
}
