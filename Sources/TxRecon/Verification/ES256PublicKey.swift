// ES256PublicKey: the P-256 public key of an App Store leaf certificate, and
// the ES256 check (ECDSA P-256 with SHA-256, RFC 7518 §3.4) of a JWS
// signature with it.
//
// JOSE writes the signature as the raw 32-byte big-endian r and s side by
// side; OpenSSL verifies the DER `ECDSA-Sig-Value`, so r and s are handed to
// OpenSSL as an ECDSA_SIG and encoded by it. The elliptic-curve arithmetic is
// OpenSSL's. Touches no files and logs nothing.
import CCrypto

/// A P-256 public key, owning its OpenSSL `EVP_PKEY` and a verification
/// context set up once for it (setting one up costs about a tenth of a
/// verification). Not Sendable on purpose: the context is used without
/// locking, by the one verifier on one thread whose chain cache holds it.
final class ES256PublicKey {
    /// The OpenSSL key (`EVP_PKEY *`); freed with this instance.
    private let key: OpaquePointer
    /// `EVP_PKEY_CTX *` initialised for verification with `key`.
    private let context: OpaquePointer

    /// The length of a JOSE ES256 signature: r and s, 32 bytes each.
    static let signatureLength = 64

    /// The key of `certificate`; nil when it is not an elliptic-curve key on
    /// P-256 (prime256v1).
    init?(certificate: Certificate) {
        guard let key = X509_get_pubkey(certificate.handle) else {
            ERR_clear_error()
            return nil
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC,
              EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1,
              name.withUnsafeBufferPointer({ String(cString: $0.baseAddress!) }) == SN_X9_62_prime256v1,
              let context = EVP_PKEY_CTX_new(key, nil)
        else {
            EVP_PKEY_free(key)
            ERR_clear_error()
            return nil
        }
        guard EVP_PKEY_verify_init(context) == 1 else {
            EVP_PKEY_CTX_free(context)
            EVP_PKEY_free(key)
            ERR_clear_error()
            return nil
        }
        self.key = key
        self.context = context
    }

    deinit {
        EVP_PKEY_CTX_free(context)
        EVP_PKEY_free(key)
    }

    /// Whether `signature`, a JOSE ES256 signature (r‖s), signs `message`
    /// (the JWS signing input `header.payload`) under this key.
    func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        guard signature.count == ES256PublicKey.signatureLength, let der = ES256PublicKey.der(signature) else {
            return false
        }
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        guard message.withUnsafeBufferPointer({ SHA256($0.baseAddress, $0.count, &digest) }) != nil else { return false }
        return EVP_PKEY_verify(context, der, der.count, digest, digest.count) == 1
    }

    /// The DER ECDSA-Sig-Value of a raw r‖s, as OpenSSL encodes it.
    private static func der(_ raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let half = Int32(raw.count / 2)
        let (r, s) = raw.withUnsafeBufferPointer { raw in
            (BN_bin2bn(raw.baseAddress, half, nil), BN_bin2bn(raw.baseAddress! + Int(half), half, nil))
        }
        // ECDSA_SIG_set0 takes r and s over only when it succeeds.
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }
}
