// Certificate: one X.509 certificate parsed by OpenSSL's libcrypto, and the
// facts about it that App Store verification and `check-config` read:
// subject, SHA-256 fingerprint, validity window, extensions by OID, whether
// it is a self-signed CA.
//
// All parsing is OpenSSL's (d2i_X509, PEM_read_bio_X509); nothing here reads
// ASN.1 by hand. Touches no files and logs nothing; a failed parse is nil.
import CCrypto
import Glibc

/// One parsed certificate, owning its OpenSSL `X509`. Not Sendable on
/// purpose: OpenSSL fills caches inside an `X509` lazily (extensions, key
/// usage) without locking, so one instance stays on the thread that uses it.
final class Certificate {
    /// The OpenSSL object (`X509 *`); freed with this instance.
    let handle: OpaquePointer

    /// Parses exactly one DER certificate that fills all of `der`; nil for
    /// anything else (not DER, not a certificate, trailing bytes).
    init?(der: [UInt8]) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let certificate = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            guard cursor == base + buffer.count else {
                X509_free(certificate)
                return nil
            }
            return certificate
        }
        ERR_clear_error()
        guard let parsed else { return nil }
        handle = parsed
    }

    /// Takes ownership of `handle`, an `X509 *` OpenSSL returned.
    init(owning handle: OpaquePointer) {
        self.handle = handle
    }

    deinit { X509_free(handle) }

    /// The DER encoding.
    var der: [UInt8] {
        let length = i2d_X509(handle, nil)
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509(handle, &cursor)
        }
        return bytes
    }

    /// The subject in RFC 2253 form (last RDN first, as `openssl x509
    /// -nameopt RFC2253` prints it), e.g. `C=US,O=Apple Inc.,OU=Apple
    /// Certification Authority,CN=Apple Root CA - G3`.
    var subject: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, X509_get_subject_name(handle), 0, txr_XN_FLAG_RFC2253()) >= 0 else { return "" }
        var text = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        let count = text.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
        return String(decoding: text.prefix(max(Int(count), 0)), as: UTF8.self)
    }

    /// The SHA-256 of the DER encoding as colon-separated upper-case hex, the
    /// form `openssl x509 -fingerprint -sha256` prints.
    var sha256Fingerprint: String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(handle, EVP_sha256(), &digest, &length) == 1 else { return "" }
        let hex = Array("0123456789ABCDEF")
        return digest.prefix(Int(length)).map { "\(hex[Int($0 >> 4)])\(hex[Int($0 & 0xF)])" }.joined(separator: ":")
    }

    /// The first second the certificate is valid, in seconds since 1970.
    var notBefore: Int64? { Certificate.seconds(X509_get0_notBefore(handle)) }
    /// The last second the certificate is valid, in seconds since 1970.
    var notAfter: Int64? { Certificate.seconds(X509_get0_notAfter(handle)) }

    /// Whether an extension with the dotted OID `oid` is present, critical or not.
    func hasExtension(_ oid: String) -> Bool {
        let count = X509_get_ext_count(handle)
        var text = [CChar](repeating: 0, count: 128)
        for index in 0..<max(count, 0) {
            guard let object = X509_EXTENSION_get_object(X509_get_ext(handle, index)) else { continue }
            let length = OBJ_obj2txt(&text, Int32(text.count), object, 1)
            if length > 0, length < text.count, text.withUnsafeBufferPointer({ String(cString: $0.baseAddress!) }) == oid {
                return true
            }
        }
        return false
    }

    /// Whether this is a CA certificate that signed itself (a root), its
    /// self-signature checked.
    var isSelfSignedCA: Bool {
        defer { ERR_clear_error() }
        return X509_check_ca(handle) != 0 && X509_self_signed(handle, 1) == 1
    }

    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}
