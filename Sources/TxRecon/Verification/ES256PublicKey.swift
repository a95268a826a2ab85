// ES256PublicKey: the P-256 public key of an App Store leaf certificate, and
// the ES256 check (ECDSA P-256 with SHA-256, RFC 7518 §3.4) of a JWS
// signature with it.
//
// JOSE writes the signature as the raw 32-byte big-endian r and s side by
// side; OpenSSL verifies the DER `ECDSA-Sig-Value`, which is written here
// (two unsigned INTEGERs in a SEQUENCE: a fixed shape, byte for byte what
// OpenSSL's i2d_ECDSA_SIG gives, which a test checks). The elliptic-curve
// arithmetic is OpenSSL's. Touches no files and logs nothing.
import CCrypto

/// A P-256 public key, owning its OpenSSL `EVP_PKEY`, a verification
/// context set up once for it (setting one up costs about a tenth of a
/// verification) and a SHA-256 context. Not Sendable on purpose: the
/// contexts are used without locking, by the one verifier on one thread
/// whose chain cache holds it.
final class ES256PublicKey {
    /// The OpenSSL key (`EVP_PKEY *`); freed with this instance.
    private let key: OpaquePointer
    /// `EVP_PKEY_CTX *` initialised for verification with `key`.
    private let context: OpaquePointer
    /// SHA-256 (`EVP_MD *`), fetched once: OpenSSL's one-shot SHA256()
    /// looks the algorithm up by name on every call, about 2,800
    /// instructions of each JWS's check.
    private let sha256: OpaquePointer
    /// `EVP_MD_CTX *` that hashes each signing input with `sha256`.
    private let hashing: OpaquePointer

    /// The length of a JOSE ES256 signature: r and s, 32 bytes each.
    static let signatureLength = 64

    /// The key of `certificate`; nil when it is not an elliptic-curve key on
    /// P-256 (prime256v1), or OpenSSL cannot set up the contexts.
    init?(certificate: Certificate) {
        defer { ERR_clear_error() }
        guard let key = X509_get_pubkey(certificate.handle) else { return nil }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC,
              EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1,
              name.withUnsafeBufferPointer({ String(cString: $0.baseAddress!) }) == SN_X9_62_prime256v1
        else {
            EVP_PKEY_free(key)
            return nil
        }
        let context = EVP_PKEY_CTX_new(key, nil)
        let sha256 = EVP_MD_fetch(nil, "SHA256", nil)
        let hashing = EVP_MD_CTX_new()
        guard let context, let sha256, let hashing, EVP_PKEY_verify_init(context) == 1 else {
            EVP_MD_CTX_free(hashing)
            EVP_MD_free(sha256)
            EVP_PKEY_CTX_free(context)
            EVP_PKEY_free(key)
            return nil
        }
        self.key = key
        self.context = context
        self.sha256 = sha256
        self.hashing = hashing
    }

    deinit {
        EVP_MD_CTX_free(hashing)
        EVP_MD_free(sha256)
        EVP_PKEY_CTX_free(context)
        EVP_PKEY_free(key)
    }

    /// Whether `signature`, a JOSE ES256 signature (r‖s), signs `message`
    /// (the JWS signing input `header.payload`) under this key.
    func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        guard signature.count == ES256PublicKey.signatureLength else { return false }
        // The DER and the digest on the stack: once per JWS on intake's hot
        // path, where OpenSSL's ECDSA_SIG and two BIGNUMs took four
        // allocations and about 11,000 instructions (bench/FINDINGS.md).
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ES256PublicKey.maximumDERLength) { der in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(SHA256_DIGEST_LENGTH)) { digest in
                let derCount = signature.withUnsafeBufferPointer { ES256PublicKey.writeDER($0, to: der) }
                var digestCount: UInt32 = 0
                guard EVP_DigestInit_ex2(hashing, sha256, nil) == 1,
                      message.withUnsafeBufferPointer({ EVP_DigestUpdate(hashing, $0.baseAddress, $0.count) }) == 1,
                      EVP_DigestFinal_ex(hashing, digest.baseAddress, &digestCount) == 1
                else { return false }
                return EVP_PKEY_verify(context, der.baseAddress, derCount, digest.baseAddress, Int(digestCount)) == 1
            }
        }
    }

    /// The longest DER ECDSA-Sig-Value of a P-256 signature: a SEQUENCE
    /// header and two INTEGERs of 33 bytes (a zero before a high bit).
    static let maximumDERLength = 2 + 2 * (2 + 33)

    /// Writes the DER ECDSA-Sig-Value of a raw r‖s (`raw`: 64 bytes) into
    /// `output` (at least `maximumDERLength` bytes); returns its length.
    /// Each half is an unsigned big-endian number: DER writes it without
    /// leading zero bytes (zero itself as one), with one zero byte before a
    /// first byte of 0x80 or more, which would read as negative.
    static func writeDER(_ raw: UnsafeBufferPointer<UInt8>, to output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var count = 2
        func writeInteger(_ number: Range<Int>) {
            var first = number.lowerBound
            while first < number.upperBound - 1, raw[first] == 0 { first += 1 }
            let pad = raw[first] >= 0x80 ? 1 : 0
            output[count] = 0x02
            output[count + 1] = UInt8(pad + number.upperBound - first)
            if pad == 1 { output[count + 2] = 0 }
            count += 2 + pad
            for index in first..<number.upperBound {
                output[count] = raw[index]
                count += 1
            }
        }
        writeInteger(0..<raw.count / 2)
        writeInteger(raw.count / 2..<raw.count)
        output[0] = 0x30
        output[1] = UInt8(count - 2)
        return count
    }
}
