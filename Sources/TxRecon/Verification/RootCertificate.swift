// RootCertificate: the trust anchors App Store chains must end in, read from
// the file RootCertificateFile= names (default Apple Root CA - G3).
//
// The file is PEM (one or more CERTIFICATE blocks) or DER (one or more
// certificates back to back); OpenSSL parses both. Every certificate must be
// a self-signed CA: a non-root in the file would become a trust anchor and
// let anything it issued pass. Throws `RootCertificateFileError`; logs
// nothing. Blocks on disk I/O: call it where the configuration is loaded.
import CCrypto

/// One trusted root, kept as DER so that it can cross threads and be
/// compared; parsed again by each verifier that uses it.
package struct RootCertificate: Sendable, Equatable {
    package let der: [UInt8]
    /// RFC 2253, e.g. `C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3`.
    package let subject: String
    /// SHA-256 of the DER, colon-separated upper-case hex.
    package let sha256Fingerprint: String

    init(_ certificate: Certificate) {
        der = certificate.der
        subject = certificate.subject
        sha256Fingerprint = certificate.sha256Fingerprint
    }

    /// Files larger than this are refused, bytes.
    static let maximumFileSize = 1 << 20

    /// The roots in the file at `path`.
    static func read(_ path: String) throws(RootCertificateFileError) -> [RootCertificate] {
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.read(path, limit: maximumFileSize).bytes
        } catch {
            throw .unreadable(error)
        }
        let certificates = try isPEM(bytes) ? parsePEM(bytes) : parseDER(bytes)
        guard !certificates.isEmpty else { throw .empty }
        for (index, certificate) in certificates.enumerated() where !certificate.isSelfSignedCA {
            throw .notRoot(index: index + 1, subject: certificate.subject)
        }
        return certificates.map(RootCertificate.init)
    }

    private static func isPEM(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: Array("-----BEGIN ".utf8))
            || bytes.firstRange(of: Array("\n-----BEGIN ".utf8)) != nil
    }

    /// Every PEM block must be a CERTIFICATE, so that nothing in the file is
    /// silently skipped.
    private static func parsePEM(_ bytes: [UInt8]) throws(RootCertificateFileError) -> [Certificate] {
        let blocks = bytes.ranges(of: Array("-----BEGIN ".utf8)).count
        let certificateBlocks = bytes.ranges(of: Array("-----BEGIN CERTIFICATE-----".utf8)).count
        guard blocks == certificateBlocks else { throw .notCertificate(format: "PEM") }
        var certificates: [Certificate] = []
        bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return }
            defer { BIO_free(bio) }
            while let handle = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(Certificate(owning: handle))
            }
        }
        ERR_clear_error()
        guard certificates.count == certificateBlocks else { throw .notCertificate(format: "PEM") }
        return certificates
    }

    private static func parseDER(_ bytes: [UInt8]) throws(RootCertificateFileError) -> [Certificate] {
        var certificates: [Certificate] = []
        var consumed = 0
        while consumed < bytes.count {
            let next: (OpaquePointer, Int)? = bytes.withUnsafeBufferPointer { buffer in
                let start = buffer.baseAddress! + consumed
                var cursor: UnsafePointer<UInt8>? = start
                guard let handle = d2i_X509(nil, &cursor, buffer.count - consumed), let cursor else { return nil }
                return (handle, start.distance(to: cursor))
            }
            ERR_clear_error()
            guard let (handle, length) = next else { throw .notCertificate(format: "DER") }
            certificates.append(Certificate(owning: handle))
            consumed += length
        }
        return certificates
    }
}

/// Why RootCertificateFile= cannot be used; `description` completes a
/// sentence whose subject is the file.
enum RootCertificateFileError: Error, Equatable, CustomStringConvertible {
    case unreadable(RegularFile.Failure)
    case empty
    /// `format` is `PEM` or `DER`.
    case notCertificate(format: String)
    /// The 1-based position of a certificate that is not a self-signed CA.
    case notRoot(index: Int, subject: String)

    var description: String {
        switch self {
        case let .unreadable(failure):
            return failure.description
        case .empty:
            return "holds no certificate"
        case let .notCertificate(format):
            return "is not a \(format) file of X.509 certificates only; give the root certificate(s) "
                + "as PEM (-----BEGIN CERTIFICATE-----) or DER"
        case let .notRoot(index, subject):
            return "holds certificate \(index) (\(subject)), which is not a self-signed CA; only root "
                + "certificates may be trusted"
        }
    }
}
