// BodyVerdict: what a received body means for its answer, decided before
// anything is written: with the daemon's own decoder and verifier.
//
//   a body this endpoint takes, verified              spool it, 200
//   genuine App Store data this txrecon's settings     spool it (the daemon sets it aside in
//     refuse (bundle id, environment, app id)            rejected/ with the reason, to be requeued
//                                                        after a fix), 200 with a note; Apple sends a
//                                                        sandbox notification only once
//   a signature or chain that does not verify          422 with the code, nothing written: an
//                                                        attacker must not be able to fill the disk
//   anything else (not a format, not this endpoint's)  400 with the code, nothing written
//
// Pure but for the verifier's OpenSSL work; touches no files, logs nothing.

enum BodyVerdict: Equatable {
    /// Write it; `setAside` names why the daemon will reject it (genuine
    /// data this configuration refuses), nil when it will deliver it.
    case spool(setAside: Rejection?)
    case refuse(ReceiveRefusal)

    /// The rejection codes of data Apple did sign that this txrecon's
    /// settings refuse, or that names no app: spooled, so that nothing
    /// genuine is lost.
    static let refusedBySettings: Set<String> = [
        RejectionCode.wrongBundleID.rawValue, RejectionCode.wrongEnvironment.rawValue,
        RejectionCode.wrongAppAppleID.rawValue, RejectionCode.noAppNamed.rawValue,
    ]

    /// The codes of a signature or chain that does not verify.
    static let unverified: Set<String> = [
        RejectionCode.unsupportedAlgorithm, .invalidX5C, .invalidCertificate, .invalidChain, .missingOID,
        .invalidSignature, .invalidReceiptSignature, .receiptUntrustedChain, .receiptMissingOID,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    /// Judges `body`, sent to `endpoint`, with `decoder` and `verifier`
    /// (nil with Mode=none).
    static func judge(_ body: [UInt8], at endpoint: ReceiveEndpoint, decoder: InputDecoder,
                      verifier: SignedDataVerifier?) -> BodyVerdict {
        let decoded: DecodedInput
        do {
            decoded = try decoder.decode(body, verifyingWith: verifier)
        } catch {
            if refusedBySettings.contains(error.code), let decodedOnly = try? decoder.decode(body) {
                // Signed data this configuration does not take: kept when it
                // is this endpoint's, else refused as not this endpoint's. The
                // refusal never says what the configuration wants (the bundle
                // ids an installation serves, some of them unreleased): the
                // notification endpoint answers anyone who posts.
                return endpoint.accepts(decodedOnly) ? .spool(setAside: error) : .refuse(notTaken(at: endpoint))
            }
            let status = unverified.contains(error.code) ? 422 : 400
            return .refuse(ReceiveRefusal(status, error.code, error.detail))
        }
        guard endpoint.accepts(decoded) else { return .refuse(notTaken(at: endpoint)) }
        return .spool(setAside: nil)
    }

    /// The refusal of what `endpoint` does not take.
    private static func notTaken(at endpoint: ReceiveEndpoint) -> ReceiveRefusal {
        ReceiveRefusal(400, RejectionCode.unknownFormat.rawValue, "\(endpoint.rawValue) takes "
            + endpoint.formats + "; see docs/receive.md \"txrecon receive\"")
    }
}

extension ReceiveEndpoint {
    /// Whether what `decoded` holds is this endpoint's: its item's kind, or
    /// for a receipt upload, the transactions endpoint's. A
    /// notification must come as Apple posts it, `{"signedPayload": …}`.
    func accepts(_ decoded: DecodedInput) -> Bool {
        switch decoded {
        case let .item(item): takes(item.kind)
        case .receipt: self == .transactions
        // The daemon's own split of an upload, which names its spool's receipts/.
        case .page, .receiptPart: false
        }
    }

    /// What the endpoint takes, in words for a refusal.
    var formats: String {
        switch self {
        case .notifications: "App Store Server Notifications V2 bodies, {\"signedPayload\": \"…\"}"
        case .transactions: "signed transactions (a JWS, or {\"signedTransactionInfo\": …}) and StoreKit 1 receipt "
            + "uploads ({\"receipt\": …})"
        case .envelopes: "generic envelopes, {\"id\": …, \"version\": …, \"payload\": …}"
        case .health: "no body"
        }
    }
}
