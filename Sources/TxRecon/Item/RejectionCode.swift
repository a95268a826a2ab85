// RejectionCode: the stable codes intake writes into `.reason` files and the
// journal's TXRECON_REASON. Listed once here so that a code is never spelled
// two ways; operators and scripts match on them, so never rename one.

/// Why intake refused a file, as a stable machine-matchable code.
enum RejectionCode: String, Sendable, CaseIterable {
    /// The file is empty or holds only whitespace.
    case emptyFile = "empty-file"
    /// Neither a compact JWS nor valid JSON.
    case notJSON = "not-json"
    /// Valid JSON, but none of the known formats.
    case unknownFormat = "unknown-format"
    /// A compact JWS is structurally broken (segments, base64url, header).
    case malformedJWS = "malformed-jws"
    /// A JWS payload does not decode to a JSON object.
    case malformedPayload = "malformed-payload"
    /// A required member is absent.
    case missingField = "missing-field"
    /// A member has the wrong type or an impossible value.
    case invalidField = "invalid-field"
    /// A top-level member that the format does not define (formats 2, 5).
    case unexpectedMember = "unexpected-member"
    /// An upload's context (its members besides the signed data) is larger
    /// than InputDecoder.maximumContextSize.
    case contextTooLarge = "context-too-large"
    /// A transaction history page without transactions.
    case emptyPage = "empty-page"
    /// A receipt upload (format 6) that is not a StoreKit 1 app receipt.
    case malformedReceipt = "malformed-receipt"
    /// A receipt without in-app purchases.
    case emptyReceipt = "empty-receipt"
    /// A part of a receipt upload naming a receipt receipts/ does not hold
    /// (or holds damaged), or read where receipts/ is not (the receiver).
    case receiptNotStored = "receipt-not-stored"
    /// A generic envelope while envelopes are not accepted.
    case envelopesDisabled = "envelopes-disabled"
    /// Well-formed App Store data that is not deliverable on its own.
    case unsupportedContent = "unsupported-content"

    // Verification (Mode=appstore), in the order the checks run.

    /// The JWS header's `alg` is not `ES256`.
    case unsupportedAlgorithm = "unsupported-alg"
    /// The header's `x5c` is missing or does not hold exactly three strings.
    case invalidX5C = "invalid-x5c"
    /// An `x5c` entry is not standard base64 of a DER certificate, or the
    /// leaf's key is not P-256.
    case invalidCertificate = "invalid-certificate"
    /// The certificates do not chain to a configured root under RFC 5280 at
    /// the payload's `signedDate`.
    case invalidChain = "invalid-chain"
    /// The intermediate or leaf lacks Apple's marker extension.
    case missingOID = "missing-oid"
    /// The ES256 signature does not verify with the leaf's key.
    case invalidSignature = "invalid-signature"
    /// `bundleId` is not `BundleID=`.
    case wrongBundleID = "wrong-bundle-id"
    /// `appAppleId` of a Production notification is not `AppAppleID=`.
    case wrongAppAppleID = "wrong-app-apple-id"
    /// `environment` is not `Environment=`.
    case wrongEnvironment = "wrong-environment"
    /// A notification that verified but names no app anywhere: none of its
    /// containers carries a bundleId. Logged at error level: a person must
    /// look (Apple changed something txrecon does not read yet).
    case noAppNamed = "no-app-named"

    // Receipts (format 6), Mode=appstore.

    /// The PKCS#7 signature does not verify, or covers another content.
    case invalidReceiptSignature = "invalid-receipt-signature"
    /// The signer does not chain to a receipt root at the creation date.
    case receiptUntrustedChain = "receipt-untrusted-chain"
    /// The intermediate or the signer lacks Apple's marker extension.
    case receiptMissingOID = "receipt-missing-oid"
}

extension Rejection {
    init(_ code: RejectionCode, _ detail: String) {
        self.init(code.rawValue, detail)
    }
}
