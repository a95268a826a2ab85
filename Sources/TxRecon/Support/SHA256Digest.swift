// SHA256Digest: OpenSSL's one-shot SHA-256, as bytes or lowercase hex: the
// name a stored receipt goes by, the content digest of a payload, which
// input an import's checkpoint belongs to. Pure.
import CCrypto

enum SHA256Digest {
    static func bytes(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = data.withUnsafeBufferPointer { SHA256($0.baseAddress, $0.count, &digest) }
        return digest
    }

    /// 64 lowercase hex digits.
    static func hex(_ data: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes(data) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
