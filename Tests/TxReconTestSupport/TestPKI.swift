// TestPKI: the certificates under Tests/TxReconTests/Fixtures/testpki (made
// by make-testpki.sh there, shaped like Apple's App Store signing PKI) and an
// ES256 signer with their leaf key, so that tests can make JWS that verify,
// and forge every way one can fail to.
//
// Signing is OpenSSL's (EVP_DigestSign), the DER signature turned into the
// JOSE r‖s form with OpenSSL's ECDSA_SIG. Reads fixture files; a missing one
// stops the test run with its path.
import CCrypto
import FoundationEssentials
import TxRecon

package enum TestPKI {
    /// `Tests/TxReconTests/Fixtures/testpki`.
    package static let directory: String = {
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(2)
        return components.joined(separator: "/") + "/TxReconTests/Fixtures/testpki"
    }()

    /// The path of `NAME.pem`, e.g. `root`, `lookalike-root`.
    package static func path(_ name: String) -> String {
        directory + "/" + name + ".pem"
    }

    /// The certificate in `NAME.pem` as an x5c entry: standard base64 of its
    /// DER, which is the PEM body without its line breaks.
    package static func certificate(_ name: String) -> String {
        let text = String(decoding: read(path(name)), as: UTF8.self)
        return text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    /// The x5c of certificates by name, leaf first.
    package static func x5c(_ names: [String]) -> JSONValue {
        .array(names.map { .string(certificate($0)) })
    }

    /// The chain of a genuine-looking signature: leaf, intermediate, root.
    package static let validChain = ["leaf", "intermediate", "root"]

    /// A header like Apple's: `{"alg":"ES256","x5c":[…]}`.
    package static func header(alg: String = "ES256", chain: [String] = validChain) -> JSONValue {
        .object([("alg", .string(alg)), ("x5c", x5c(chain))])
    }

    /// A compact JWS of `payload` under `header`, signed with the leaf key.
    package static func sign(header: JSONValue = header(), payload: JSONValue) -> String {
        sign(headerJSON: header.serializedString, payloadJSON: payload.serializedString)
    }

    /// A compact JWS from raw JSON text, signed with the leaf key; for
    /// headers JSONValue cannot express (duplicate keys).
    package static func sign(headerJSON: String, payloadJSON: String) -> String {
        let input = TestJWS.base64URL(Array(headerJSON.utf8)) + "." + TestJWS.base64URL(Array(payloadJSON.utf8))
        return input + "." + TestJWS.base64URL(es256(Array(input.utf8)))
    }

    /// `signedDate` values (ms) relative to the leaf's validity,
    /// 2024-01-01T00:00:00Z to 2026-01-01T00:00:00Z.
    package static let insideLeafValidity: Int64 = 1_760_000_000_000
    package static let afterLeafValidity: Int64 = 1_767_225_600_000 + 1000
    package static let beforeLeafValidity: Int64 = 1_704_067_200_000 - 1000

    /// The JOSE ES256 signature (r‖s, 64 bytes) of `message` with leaf.key.
    package static func es256(_ message: [UInt8]) -> [UInt8] {
        let pem = read(directory + "/leaf.key")
        guard let bio = pem.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
            fatalError("OpenSSL cannot allocate a BIO")
        }
        defer { BIO_free(bio) }
        guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil), let context = EVP_MD_CTX_new() else {
            fatalError("\(directory)/leaf.key is not a PEM private key")
        }
        defer {
            EVP_PKEY_free(key)
            EVP_MD_CTX_free(context)
        }
        var der = [UInt8](repeating: 0, count: 128)
        var length = der.count
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(context, &der, &length, message, message.count) == 1
        else { fatalError("OpenSSL could not sign with \(directory)/leaf.key") }
        return der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, length) else { fatalError("OpenSSL signature is not DER") }
            defer { ECDSA_SIG_free(signature) }
            var raw = [UInt8](repeating: 0, count: 64)
            raw.withUnsafeMutableBufferPointer { output in
                _ = BN_bn2binpad(ECDSA_SIG_get0_r(signature), output.baseAddress, 32)
                _ = BN_bn2binpad(ECDSA_SIG_get0_s(signature), output.baseAddress! + 32, 32)
            }
            return raw
        }
    }

    private static func read(_ path: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            fatalError("fixture \(path) is missing; run Tests/TxReconTests/Fixtures/testpki/make-testpki.sh")
        }
        return [UInt8](data)
    }
}
