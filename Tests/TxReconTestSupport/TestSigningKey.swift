// TestSigningKey: a fresh elliptic-curve key pair per test, made with
// OpenSSL, standing in for the In-App Purchase key App Store Connect hands
// out: the private key as a PKCS#8 PEM (what a .p8 file holds) for txrecon to
// load, and ES256 verification of raw r‖s signatures for the mock App Store
// Server API.
//
// Verification rebuilds the DER signature and the public key from bytes on
// every call, so the value holds no OpenSSL object and is safely Sendable;
// it is written apart from txrecon's signer on purpose, so one checks the
// other. Stops the test run if OpenSSL cannot make a key.
import CCrypto

package struct TestSigningKey: Sendable {
    /// `-----BEGIN PRIVATE KEY-----…`, PKCS#8.
    package let pkcs8PEM: String
    /// SubjectPublicKeyInfo, DER.
    package let publicKeyDER: [UInt8]

    /// A new key on `curve` (an OpenSSL group name): P-256 unless a test
    /// needs a wrong one.
    package init(curve: String = "P-256") {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { fatalError("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, curve) == 1,
              EVP_PKEY_generate(context, &key) == 1, let key
        else { fatalError("OpenSSL cannot generate a \(curve) key") }
        defer { EVP_PKEY_free(key) }

        guard let bio = BIO_new(BIO_s_mem()) else { fatalError("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { fatalError("PEM_write_bio_PrivateKey") }
        var pem = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        guard BIO_read(bio, &pem, Int32(pem.count)) == Int32(pem.count) else { fatalError("BIO_read") }
        pkcs8PEM = String(decoding: pem, as: UTF8.self)

        var der = [UInt8](repeating: 0, count: Int(i2d_PUBKEY(key, nil)))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_PUBKEY(key, &cursor)
        }
        publicKeyDER = der
    }

    /// Whether `signature` (ES256, raw r‖s, 64 bytes) signs `message` with
    /// this key.
    package func verifies(signature: [UInt8], of message: [UInt8]) -> Bool {
        guard signature.count == 64, let der = Self.derSignature(raw: signature) else { return false }
        let publicKey: OpaquePointer? = publicKeyDER.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let publicKey else { return false }
        defer { EVP_PKEY_free(publicKey) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, publicKey) == 1 else { return false }
        let verified = der.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBufferPointer { messageBytes in
                EVP_DigestVerify(context, signatureBytes.baseAddress, signatureBytes.count,
                                 messageBytes.baseAddress, messageBytes.count)
            }
        }
        ERR_clear_error()
        return verified == 1
    }

    /// The DER ECDSA-Sig-Value of raw r‖s.
    private static func derSignature(raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var der = [UInt8](repeating: 0, count: Int(i2d_ECDSA_SIG(signature, nil)))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_ECDSA_SIG(signature, &cursor)
        }
        return der
    }
}
