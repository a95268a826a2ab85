// VerificationFailure: why one App Store signed string is not trusted, one
// case per check, in the order the checks run (Apple's order: algorithm,
// certificates, chain, OIDs, signature, then the claims: bundle, app,
// environment). Each becomes a `Rejection` with a stable code and one
// sentence naming the signed string, what was wrong and what to do.

/// Why a signed string failed verification.
enum VerificationFailure: Error, Sendable, Equatable {
    /// The header's `crit` names extensions, none of which txrecon understands.
    case criticalHeader
    /// The header's `alg` as found (`none`, `HS256`, `a number`, `missing`).
    case unsupportedAlgorithm(String)
    /// What is wrong with `x5c`, completing "x5c …".
    case invalidX5C(String)
    /// Entry `position` (0 leaf, 1 intermediate, 2 root) of `x5c`, and what is wrong with it.
    case invalidCertificate(position: Int, problem: String)
    /// OpenSSL's reason (e.g. `certificate has expired`), the verification
    /// time in seconds since 1970, and which certificate it concerns.
    case invalidChain(reason: String, at: Int64, concerning: String)
    /// `leaf` or `intermediate`, and the OID it lacks.
    case missingOID(certificate: String, oid: String)
    case invalidSignature
    case wrongBundleID(found: String?, want: String)
    case wrongAppAppleID(found: Int64?, want: Int64)
    case wrongEnvironment(found: String?, want: String)
    /// A notification none of whose containers names a bundleId.
    case noAppNamed

    /// The x5c positions as messages name them.
    static let positions = ["leaf", "intermediate", "root"]

    var code: RejectionCode {
        switch self {
        case .criticalHeader: .malformedJWS
        case .unsupportedAlgorithm: .unsupportedAlgorithm
        case .invalidX5C: .invalidX5C
        case .invalidCertificate: .invalidCertificate
        case .invalidChain: .invalidChain
        case .missingOID: .missingOID
        case .invalidSignature: .invalidSignature
        case .wrongBundleID: .wrongBundleID
        case .wrongAppAppleID: .wrongAppAppleID
        case .wrongEnvironment: .wrongEnvironment
        case .noAppNamed: .noAppNamed
        }
    }

    /// The rejection for the signed string `subject` names (e.g.
    /// `signedTransactionInfo`, `data.signedRenewalInfo of signedPayload`);
    /// `signingTime` is what an invalid chain's message calls the time the
    /// chain was validated at (`receiptCreationDate` for most app
    /// transactions).
    func rejection(subject: String, signingTime: String = "signedDate") -> Rejection {
        let requeue = "then run txrecon requeue-rejected"
        switch self {
        case .criticalHeader:
            return Rejection(code, "\(subject) has a header with crit, naming extensions txrecon does not "
                + "understand (RFC 7515 §4.1.11); App Store headers have none")
        case let .unsupportedAlgorithm(found):
            return Rejection(code, "\(found) (the alg of \(subject)); App Store data is signed with ES256 only")
        case let .invalidX5C(problem):
            return Rejection(code, "x5c of \(subject) \(problem); App Store signatures carry exactly three "
                + "certificates (leaf, intermediate, root) as standard base64 DER")
        case let .invalidCertificate(position, problem):
            return Rejection(code, "the \(VerificationFailure.positions[position]) certificate (x5c[\(position)]) "
                + "of \(subject) \(problem)")
        case let .invalidChain(reason, time, concerning):
            return Rejection(code, "\(reason) at \(signingTime) \(VerificationFailure.rfc3339(seconds: time)) "
                + "(\(concerning), in \(subject)); the certificates do not chain to a root in RootCertificateFile= "
                + "at the time the data was signed")
        case let .missingOID(certificate, oid):
            return Rejection(code, "\(certificate) lacks \(oid) (in \(subject)); the certificate is not one Apple "
                + "issues for App Store signing")
        case .invalidSignature:
            return Rejection(code, "the ES256 signature of \(subject) does not match its header and payload "
                + "under the leaf certificate's key; the data was altered or signed by someone else")
        case let .wrongBundleID(found, want):
            return Rejection(code, "\(VerificationFailure.quote(found) ?? "no bundleId") (want \(want)) in \(subject); if this app is "
                + "yours, add it as an app (/etc/txrecon/apps/NAME.conf with its BundleID= under [Verification]), "
                + "reload, \(requeue)")
        case let .wrongAppAppleID(found, want):
            return Rejection(code, "\(found.map(String.init) ?? "no appAppleId") (want \(want)) in \(subject); "
                + "if this app is yours, set AppAppleID= under [Verification] of its app file, reload, \(requeue)")
        case let .wrongEnvironment(found, want):
            return Rejection(code, "\(VerificationFailure.quote(found) ?? "no environment") (want \(want)) in \(subject); data from another "
                + "environment belongs to another txrecon; if Environment= is wrong (a production server lists \"Production Sandbox\"), fix it, reload, \(requeue)")
        case .noAppNamed:
            return Rejection(code, "\(subject) names no app: none of its containers carries a bundleId, so txrecon "
                + "cannot tell which app it is for; its signature verified, so it is Apple's. Look at it "
                + "(rejected/NAME), report it to the txrecon project, and after an upgrade that reads it, \(requeue)")
        }
    }

    /// A claim from the payload as a message may show it: one escaped line,
    /// short, as it is whatever the producer sent.
    private static func quote(_ claim: String?) -> String? {
        claim.map { LogText.singleLine($0, limit: 160) }
    }

    /// `2023-05-23T06:19:38Z`: certificate times have whole seconds.
    static func rfc3339(seconds: Int64) -> String {
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let text = RFC3339Timestamp.format(millisecondsSince1970: overflow ? Int64.max : whole)
        return String(text.dropLast(".000Z".count)) + "Z"
    }
}
