// ReceiptVerifier: decides whether a StoreKit 1 app receipt was signed by
// Apple, offline, with libcrypto: the checks Apple documents for receipt
// validation on the device, which Apple's server library does not make (its
// ReceiptUtility only extracts a transaction id).
//
//   1. The PKCS#7 SignedData has one signer, whose signature over the
//      content verifies (PKCS7_verify: real receipts carry no signed
//      attributes, so the signature covers the content itself; SHA-1 and
//      SHA-256 digests both occur, and OpenSSL's defaults accept both:
//      the authentication level is never raised), and the content it
//      verified is byte for byte the payload the decoder read.
//   2. The signer chains to a configured receipt root (Apple Inc. Root
//      Certificate) through the intermediates in the receipt, at the
//      receipt's creation date, not now: every real signing certificate has
//      expired by now, and a receipt signed while its chain was valid stays
//      valid. The chain is exactly leaf → intermediate → root.
//   3. The intermediate carries Apple's WWDR marker 1.2.840.113635.100.6.2.1
//      and the leaf the receipt-signing marker 1.2.840.113635.100.6.11.1.
//
// A signer found valid is remembered by its identifier, with the exact
// certificates it came with, its key and the seconds within which the
// chain's verdict cannot change: a later receipt from it, carrying the same
// certificates, is checked with one RSA verification over its payload, the
// digest and signature algorithms its SignerInfo names (SHA-1 or SHA-256,
// rsaEncryption, no signed attributes, as every real receipt has). Anything
// else takes the whole way through OpenSSL, whose parse of the receipt's
// certificates costs some twenty times the signature check. Throws a
// `Rejection` with a stable code; logs nothing. Not Sendable on purpose: it
// holds OpenSSL state and a cache, and lives on one intake thread.
import CCrypto

final class ReceiptVerifier {
    /// Signers whose chain was found valid, by their SignerInfo identifier.
    /// Small: an app's receipts come from a handful of signers.
    private var verifiedSigners: [[UInt8]: VerifiedSigner] = [:]
    static let cacheCapacity = 64
    /// `X509_STORE *` holding only the receipt roots.
    private let store: OpaquePointer

    init(roots: [RootCertificate]) {
        guard let store = X509_STORE_new() else { fatalError("OpenSSL cannot allocate an X509_STORE") }
        for root in roots {
            guard let certificate = Certificate(der: root.der), X509_STORE_add_cert(store, certificate.handle) == 1 else {
                fatalError("OpenSSL refused root \(root.subject), which it parsed when the configuration was loaded")
            }
        }
        self.store = store
    }

    deinit { X509_STORE_free(store) }

    /// Verifies the receipt `der`, which the decoder read as `receipt`, at
    /// `creationDate` (ms since 1970).
    func verify(der: [UInt8], receipt: AppReceipt, at creationDate: Int64) throws(Rejection) {
        let time = creationDate / 1000
        if let signer = receipt.signer, !signer.hasSignedAttributes,
           signer.signatureAlgorithm == ReceiptVerifier.rsaEncryption,
           let digest = ReceiptVerifier.digest(signer.digestAlgorithm),
           let known = verifiedSigners[signer.identifier], known.certificates == signer.certificates,
           known.window.contains(time) {
            guard known.verifies(signer.signature, of: receipt.payload, digest: digest) else {
                throw Rejection(.invalidReceiptSignature, "the receipt's signature does not verify")
            }
            return
        }
        let verified = try verifyThroughOpenSSL(der: der, payload: receipt.payload, at: time)
        // The key is taken (a reference of its own, which the cache entry
        // frees) only to be cached: a receipt whose SignerInfo the reader
        // could not take apart has no entry to free it.
        guard let signer = receipt.signer, let key = X509_get_pubkey(verified.leaf.handle) else { return }
        if verifiedSigners.count >= ReceiptVerifier.cacheCapacity { verifiedSigners.removeAll() }
        verifiedSigners[signer.identifier] = VerifiedSigner(certificates: signer.certificates, key: key,
                                                            window: verified.seconds)
    }

    /// 1.2.840.113549.1.1.1, the signature algorithm of every real receipt.
    static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]

    /// SHA-1 (1.3.14.3.2.26) or SHA-256 (2.16.840.1.101.3.4.2.1).
    private static func digest(_ oid: [UInt8]) -> OpaquePointer? {
        switch oid {
        case [0x2B, 0x0E, 0x03, 0x02, 0x1A]: EVP_sha1()
        case [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]: EVP_sha256()
        default: nil
        }
    }

    /// The whole check through OpenSSL: signature, content, chain. Returns
    /// the signer's certificate and the seconds in which the chain's verdict
    /// holds.
    private func verifyThroughOpenSSL(der: [UInt8], payload: [UInt8],
                                      at time: Int64) throws(Rejection) -> (leaf: Certificate, seconds: Range<Int64>) {
        let parsed: UnsafeMutablePointer<PKCS7>? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS7(nil, &cursor, buffer.count)
        }
        guard let p7 = parsed else {
            ERR_clear_error()
            throw Rejection(.invalidReceiptSignature, "the receipt is not a PKCS#7 structure OpenSSL can read")
        }
        defer {
            PKCS7_free(p7)
            ERR_clear_error()
        }
        let content = try signedContent(of: p7)
        guard content == payload else {
            throw Rejection(.invalidReceiptSignature, "the content the signature covers is not the receipt's payload")
        }
        guard let signers = PKCS7_get0_signers(p7, nil, 0) else {
            throw Rejection(.invalidReceiptSignature, "the receipt names no signer it carries the certificate of")
        }
        defer { txr_sk_X509_free(signers) }
        guard txr_sk_X509_num(signers) == 1, let signer = txr_sk_X509_value(signers, 0) else {
            throw Rejection(.invalidReceiptSignature, "the receipt has \(txr_sk_X509_num(signers)) signers, not one")
        }
        X509_up_ref(signer)
        let leaf = Certificate(owning: signer)
        let window = try validateChain(of: leaf, in: p7, at: time)
        return (leaf, window)
    }

    /// Checks the signature and returns the content it covers.
    private func signedContent(of p7: UnsafeMutablePointer<PKCS7>) throws(Rejection) -> [UInt8] {
        guard let out = BIO_new(BIO_s_mem()) else { fatalError("OpenSSL cannot allocate a memory BIO") }
        defer { BIO_free(out) }
        // The chain is validated below, at the receipt's own time.
        guard PKCS7_verify(p7, nil, store, nil, out, PKCS7_NOVERIFY) == 1 else {
            throw Rejection(.invalidReceiptSignature, "the receipt's signature does not verify (\(Self.openSSLError()))")
        }
        let length = Int(BIO_ctrl_pending(out))
        var content = [UInt8](repeating: 0, count: length)
        let read = content.withUnsafeMutableBytes { BIO_read(out, $0.baseAddress, Int32(length)) }
        return Array(content.prefix(Int(max(0, read))))
    }

    /// RFC 5280 path validation of the signer through the receipt's other
    /// certificates to a receipt root at `time` (seconds since 1970), with
    /// Apple's markers; returns the seconds in which the verdict holds.
    private func validateChain(of leaf: Certificate, in p7: UnsafeMutablePointer<PKCS7>, at time: Int64) throws(Rejection) -> Range<Int64> {
        guard let context = X509_STORE_CTX_new() else { fatalError("OpenSSL cannot allocate a verification context") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.handle, txr_PKCS7_certificates(p7)) == 1 else {
            fatalError("OpenSSL cannot set up a verification context")
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context), time_t(time))
        guard X509_verify_cert(context) == 1 else {
            let reason = String(cString: X509_verify_cert_error_string(Int(X509_STORE_CTX_get_error(context))))
            throw Rejection(.receiptUntrustedChain, "the receipt's signer \(leaf.subject) does not chain to a receipt "
                + "root at the receipt's creation date \(VerificationFailure.rfc3339(seconds: time)): \(reason)")
        }
        let path = X509_STORE_CTX_get0_chain(context)
        guard txr_sk_X509_num(path) == 3, let intermediateHandle = txr_sk_X509_value(path, 1),
              let rootHandle = txr_sk_X509_value(path, 2) else {
            throw Rejection(.receiptUntrustedChain, "the path from the receipt's signer to the root has "
                + "\(txr_sk_X509_num(path)) certificates, not leaf, intermediate, root")
        }
        X509_up_ref(intermediateHandle)
        X509_up_ref(rootHandle)
        let intermediate = Certificate(owning: intermediateHandle), root = Certificate(owning: rootHandle)
        guard intermediate.hasExtension(ChainValidator.intermediateOID) else {
            throw Rejection(.receiptMissingOID, "the receipt's intermediate \(intermediate.subject) lacks "
                + "\(ChainValidator.intermediateOID), which marks Apple's WWDR intermediates")
        }
        guard leaf.hasExtension(ChainValidator.leafOID) else {
            throw Rejection(.receiptMissingOID, "the receipt's signer \(leaf.subject) lacks \(ChainValidator.leafOID), "
                + "which marks Apple's receipt-signing certificates")
        }
        var start = Int64.min, end = Int64.max
        for certificate in [leaf, intermediate, root] {
            guard let notBefore = certificate.notBefore, let notAfter = certificate.notAfter else { return 0..<0 }
            start = max(start, notBefore)
            end = min(end, notAfter)
        }
        return start < end ? (start + 1)..<end : 0..<0
    }

    private static func openSSLError() -> String {
        let code = ERR_peek_last_error()
        guard code != 0 else { return "no reason given" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A signer whose chain was found valid: the certificates it came with, its
/// key, and the seconds in which that verdict holds.
private final class VerifiedSigner {
    let certificates: [UInt8]
    /// `EVP_PKEY *`, owned.
    private let key: OpaquePointer
    let window: Range<Int64>

    init(certificates: [UInt8], key: OpaquePointer, window: Range<Int64>) {
        self.certificates = certificates
        self.key = key
        self.window = window
    }

    deinit { EVP_PKEY_free(key) }

    /// Whether `signature` is this signer's PKCS#1 v1.5 signature over
    /// `content` with `digest`: what PKCS7_verify checks of a SignerInfo
    /// without signed attributes.
    func verifies(_ signature: [UInt8], of content: [UInt8], digest: OpaquePointer) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            ERR_clear_error()
        }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, key) == 1 else { return false }
        return signature.withUnsafeBufferPointer { signature in
            content.withUnsafeBufferPointer { content in
                EVP_DigestVerify(context, signature.baseAddress, signature.count, content.baseAddress, content.count) == 1
            }
        }
    }
}
