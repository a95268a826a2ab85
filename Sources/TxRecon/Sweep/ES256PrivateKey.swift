// ES256PrivateKey: the App Store Server API key (the `.p8` file App Store
// Connect hands out: a PKCS#8 PEM of a P-256 private key), held by OpenSSL,
// and the one thing done with it: ES256 signatures as JOSE wants them.
//
// OpenSSL signs in DER (`SEQUENCE { r INTEGER, s INTEGER }`); JWS (RFC 7518
// §3.4) wants the raw 64 bytes r‖s, each left-padded to 32 bytes, so every
// signature is converted. Touches no files: the caller reads the key (see
// `SweepCredentials`) and passes its bytes. Throws `ES256PrivateKey.Failure`,
// whose text never quotes the key; OpenSSL's error queue is cleared after
// every failure so that nothing of it leaks into a later message.
import CCrypto

/// A P-256 private key for ES256. Not Sendable on purpose: it belongs to the
/// sweep's one thread, which signs one token at a time.
package final class ES256PrivateKey {
    private let key: OpaquePointer

    /// Why the key bytes were refused; `description` completes "the key …".
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// Not a PEM private key OpenSSL can read (or one protected by a
        /// passphrase, which .p8 files never are).
        case notPEM
        /// A private key, but not an elliptic-curve one.
        case notEllipticCurve
        /// An elliptic-curve key on another curve than P-256.
        case wrongCurve(String)

        package var description: String {
            switch self {
            case .notPEM:
                "is not an unencrypted PEM private key; use the .p8 file App Store Connect gave you, "
                    + "which starts with -----BEGIN PRIVATE KEY-----"
            case .notEllipticCurve:
                "is not an elliptic-curve key; App Store Server API keys are P-256 (ES256)"
            case .wrongCurve(let curve):
                "is on curve \(curve), not P-256; App Store Server API keys are P-256 (ES256)"
            }
        }
    }

    /// Reads a PEM private key (PKCS#8 or SEC 1) from `pem`.
    package init(pem: [UInt8]) throws(Failure) {
        let parsed: OpaquePointer? = pem.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            // A callback that declines: without one OpenSSL would prompt on
            // the terminal for the passphrase of an encrypted key.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let parsed else {
            ERR_clear_error()
            throw .notPEM
        }
        guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_EC else {
            EVP_PKEY_free(parsed)
            throw .notEllipticCurve
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        let curve = EVP_PKEY_get_group_name(parsed, &name, name.count, &length) == 1
            ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        guard curve == "prime256v1" || curve == "P-256" else {
            EVP_PKEY_free(parsed)
            ERR_clear_error()
            throw .wrongCurve(curve)
        }
        key = parsed
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The ES256 signature of `message` (SHA-256, then ECDSA) as JOSE's raw
    /// r‖s, 64 bytes; nil only when OpenSSL fails (out of memory).
    func sign(_ message: [UInt8]) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return nil
        }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1
        else {
            ERR_clear_error()
            return nil
        }
        var der = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBufferPointer { input in
            EVP_DigestSign(context, &der, &length, input.baseAddress, input.count)
        }
        guard signed == 1 else {
            ERR_clear_error()
            return nil
        }
        return Self.joseSignature(fromDER: Array(der.prefix(length)))
    }

    /// r‖s, each a 32-byte big-endian number, from a DER ECDSA-Sig-Value.
    static func joseSignature(fromDER der: [UInt8]) -> [UInt8]? {  // internal for testing
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else {
            ERR_clear_error()
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32),
             BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32))
        }
        guard written == (32, 32) else { return nil }
        return raw
    }
}
