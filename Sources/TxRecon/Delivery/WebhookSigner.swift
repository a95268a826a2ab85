// WebhookSigner: Standard Webhooks request signatures
// (https://www.standardwebhooks.com), so that a backend can check with its
// usual library that a delivery comes from this daemon and was not replayed
// long after.
//
// HMAC-SHA256 and base64 come from OpenSSL's libcrypto. Touches no files,
// logs nothing; the key never leaves this type.
import CCrypto

/// Signs request bodies with the decoded key of a `whsec_…` secret.
struct WebhookSigner: Sendable, CustomStringConvertible {
    private let key: [UInt8]

    init(key: [UInt8]) {
        self.key = key
    }

    /// The `webhook-signature` value: `v1,<base64 of HMAC-SHA256 over
    /// "<id>.<timestamp>.<body>">`. `timestamp` is in seconds since 1970 and
    /// must be the one sent as `webhook-timestamp`.
    func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        var message: [UInt8] = []
        message.reserveCapacity(id.utf8.count + body.count + 24)
        message.append(contentsOf: id.utf8)
        message.append(UInt8(ascii: "."))
        message.append(contentsOf: String(timestamp).utf8)
        message.append(UInt8(ascii: "."))
        message.append(contentsOf: body)
        return "v1," + Self.base64(Self.hmacSHA256(key: key, message: message))
    }

    /// The 32-byte HMAC-SHA256 of `message` under `key` (RFC 2104).
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), message.baseAddress, message.count,
                     &digest, &length)
            }
        }
        // HMAC-SHA256 fails only when OpenSSL cannot allocate memory.
        precondition(result != nil && length == 32, "OpenSSL HMAC-SHA256 failed")
        return Array(digest.prefix(Int(length)))
    }

    /// Standard base64 with padding (RFC 4648 section 4).
    static func base64(_ bytes: [UInt8]) -> String {
        var text = [UInt8](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)
        let length = bytes.withUnsafeBufferPointer { input in
            EVP_EncodeBlock(&text, input.baseAddress, Int32(input.count))
        }
        return String(decoding: text.prefix(Int(length)), as: UTF8.self)
    }

    /// Never shows the key.
    var description: String { "WebhookSigner(<redacted>)" }
}
