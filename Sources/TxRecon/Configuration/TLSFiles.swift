// TLSFiles: the PEM files of the backend's TLS (CAFile=, ClientCertificateFile=,
// ClientKeyFile=), parsed with libcrypto when the configuration is loaded
// (check-config, start, reload), so that a file that cannot work is refused
// with exit 78 instead of failing every attempt with a TLS error for ever.
// Pure but for libcrypto; the caller reads the files and words the errors.
import CCrypto

enum TLSFiles {
    /// How many certificates `pem` holds, or nil when it holds something
    /// else too, or nothing OpenSSL can read as a certificate.
    static func certificateCount(inPEM pem: [UInt8]) -> Int? {
        let blocks = pem.ranges(of: Array("-----BEGIN ".utf8)).count
        guard blocks > 0, blocks == pem.ranges(of: Array("-----BEGIN CERTIFICATE-----".utf8)).count else { return nil }
        var count = 0
        pem.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                X509_free(certificate)
                count += 1
            }
        }
        ERR_clear_error()
        return count == blocks ? count : nil
    }

    /// What is wrong with a client identity, in words completing "ClientKeyFile= …".
    enum IdentityProblem: Error, Equatable {
        case certificateUnreadable
        case keyUnreadable
        case mismatch
    }

    /// Checks that `keyPEM` is an unencrypted private key that belongs to
    /// the first certificate of `certificatePEM`.
    static func checkIdentity(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(IdentityProblem) {
        let certificate: OpaquePointer? = certificatePEM.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        // A key protected by a passphrase is refused: curl would ask for it
        // on no terminal and fail every connection.
        let key: OpaquePointer? = keyPEM.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        defer {
            if let certificate { X509_free(certificate) }
            if let key { EVP_PKEY_free(key) }
            ERR_clear_error()
        }
        guard let certificate else { throw .certificateUnreadable }
        guard let key else { throw .keyUnreadable }
        guard X509_check_private_key(certificate, key) == 1 else { throw .mismatch }
    }

    /// The lines of the base64 body of a PEM file, the parts a backend could
    /// echo of a key: kept out of every output (SecretRedactor).
    static func bodyLines(ofPEM pem: [UInt8]) -> [String] {
        String(decoding: pem, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingSuffix { $0 == " " || $0 == "\r" } }
            .filter { !$0.hasPrefix("-----") && !$0.contains(":") && $0.count >= 16 }
            .map(String.init)
    }
}

private extension Substring {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var result = self
        while let last = result.last, predicate(last) { result = result.dropLast() }
        return result
    }
}
