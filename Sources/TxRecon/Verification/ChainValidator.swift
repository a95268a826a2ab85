// ChainValidator: decides whether the `x5c` of an App Store JWS is a chain
// Apple issued for App Store signing, at the time the data was signed.
//
// The leaf and the intermediate come from the message; trust comes only from
// the configured roots, held in an OpenSSL X509_STORE (the third x5c entry
// is parsed, to refuse garbage, and otherwise ignored). X509_verify_cert does
// the RFC 5280 path validation, strict (X509_V_FLAG_X509_STRICT), at an
// explicit time (the payload's signedDate), offline: no CRL, no OCSP, as
// Apple's library does without online checks. Then, as Apple's
// AppStoreOIDPolicy does, the chain must be exactly leaf → intermediate →
// root with the intermediate carrying 1.2.840.113635.100.6.2.1 and the leaf
// 1.2.840.113635.100.6.11.1; the leaf key must be P-256. Failures are thrown
// as `VerificationFailure`; nothing is logged.
import CCrypto
import FoundationEssentials

/// A chain that passed, with what a later JWS signed by it needs.
struct VerifiedChain {
    /// The leaf's key, which signs the JWS.
    let leafKey: ES256PublicKey
    /// Seconds since 1970 within which validation at any time gives the same
    /// verdict: inside the validity of all three certificates, one second
    /// short of each end so that boundary times are always validated afresh.
    let validity: Range<Int64>
}

/// Validates chains against one set of roots. Not Sendable on purpose: it
/// holds an X509_STORE and is used by the one thread that owns its verifier.
final class ChainValidator {
    /// Marks Apple's Worldwide Developer Relations intermediate.
    static let intermediateOID = "1.2.840.113635.100.6.2.1"
    /// Marks Apple's App Store receipt-signing leaf.
    static let leafOID = "1.2.840.113635.100.6.11.1"
    /// The number of certificates in an App Store chain.
    static let chainLength = 3

    /// `X509_STORE *` holding only the configured roots.
    private let store: OpaquePointer

    /// A store trusting `roots`, each a self-signed CA (RootCertificate.read checked that).
    init(roots: [RootCertificate]) {
        guard let store = X509_STORE_new() else { fatalError("OpenSSL cannot allocate an X509_STORE") }
        for root in roots {
            // The DER was parsed when the configuration was loaded.
            guard let certificate = Certificate(der: root.der), X509_STORE_add_cert(store, certificate.handle) == 1 else {
                fatalError("OpenSSL refused root \(root.subject), which it parsed when the configuration was loaded")
            }
        }
        self.store = store
    }

    deinit { X509_STORE_free(store) }

    /// Validates `x5c` (exactly three standard base64 strings) at `time`,
    /// seconds since 1970.
    func validate(x5c: [String], at time: Int64) throws(VerificationFailure) -> VerifiedChain {
        var certificates: [Certificate] = []
        for (position, text) in x5c.enumerated() {
            guard let der = Data(base64Encoded: text) else {
                throw .invalidCertificate(position: position, problem: "is not standard base64")
            }
            guard let certificate = Certificate(der: [UInt8](der)) else {
                throw .invalidCertificate(position: position, problem: "is not a DER X.509 certificate")
            }
            certificates.append(certificate)
        }
        let leaf = certificates[0], intermediate = certificates[1]
        let root = try validatePath(leaf: leaf, intermediate: intermediate, at: time)
        guard intermediate.hasExtension(ChainValidator.intermediateOID) else {
            throw .missingOID(certificate: "intermediate", oid: ChainValidator.intermediateOID)
        }
        guard leaf.hasExtension(ChainValidator.leafOID) else {
            throw .missingOID(certificate: "leaf", oid: ChainValidator.leafOID)
        }
        guard let key = ES256PublicKey(certificate: leaf) else {
            throw .invalidCertificate(position: 0, problem: "has a key that is not an elliptic-curve key on P-256, "
                + "which ES256 needs")
        }
        return VerifiedChain(leafKey: key, validity: ChainValidator.window([leaf, intermediate, root]))
    }

    /// RFC 5280 path validation of leaf ← intermediate ← a trusted root at
    /// `time`; returns the root the path ends in.
    private func validatePath(leaf: Certificate, intermediate: Certificate,
                              at time: Int64) throws(VerificationFailure) -> Certificate {
        guard let context = X509_STORE_CTX_new(), let untrusted = txr_sk_X509_new_null() else {
            fatalError("OpenSSL cannot allocate a verification context")
        }
        defer {
            X509_STORE_CTX_free(context)
            txr_sk_X509_free(untrusted)
            ERR_clear_error()
        }
        guard txr_sk_X509_push(untrusted, intermediate.handle) > 0,
              X509_STORE_CTX_init(context, store, leaf.handle, untrusted) == 1
        else { fatalError("OpenSSL cannot set up a verification context") }
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_time(parameters, time_t(time))
        X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT))

        guard X509_verify_cert(context) == 1 else {
            let error = X509_STORE_CTX_get_error(context)
            let depth = Int(X509_STORE_CTX_get_error_depth(context))
            let reason = String(cString: X509_verify_cert_error_string(Int(error)))
            throw .invalidChain(reason: reason, at: time,
                                concerning: describe(X509_STORE_CTX_get_current_cert(context), depth: depth))
        }
        let path = X509_STORE_CTX_get0_chain(context)
        let length = Int(txr_sk_X509_num(path))
        guard length == ChainValidator.chainLength, let root = txr_sk_X509_value(path, 2),
              X509_cmp(txr_sk_X509_value(path, 1), intermediate.handle) == 0
        else {
            throw .invalidChain(reason: "the path to the root has \(length) certificates, not leaf, intermediate, root",
                                at: time, concerning: "the leaf \(leaf.subject)")
        }
        // The store keeps its own reference; this one is released with the Certificate.
        X509_up_ref(root)
        return Certificate(owning: root)
    }

    /// The seconds in which every certificate of `chain` is valid, one second
    /// short of each end; empty when a validity time cannot be read.
    private static func window(_ chain: [Certificate]) -> Range<Int64> {
        var start = Int64.min, end = Int64.max
        for certificate in chain {
            guard let notBefore = certificate.notBefore, let notAfter = certificate.notAfter else { return 0..<0 }
            start = max(start, notBefore)
            end = min(end, notAfter)
        }
        return start < end ? (start + 1)..<end : 0..<0
    }

    /// `the leaf CN=…, valid 2021-08-25T02:50:34Z to 2023-09-24T02:50:33Z`.
    private func describe(_ handle: OpaquePointer?, depth: Int) -> String {
        let position = depth < VerificationFailure.positions.count ? VerificationFailure.positions[depth] : "depth \(depth)"
        guard let handle else { return "the \(position) certificate" }
        X509_up_ref(handle)
        let certificate = Certificate(owning: handle)
        var text = "the \(position) \(certificate.subject)"
        if let start = certificate.notBefore, let end = certificate.notAfter {
            text += ", valid \(VerificationFailure.rfc3339(seconds: start)) to \(VerificationFailure.rfc3339(seconds: end))"
        }
        return text
    }
}
