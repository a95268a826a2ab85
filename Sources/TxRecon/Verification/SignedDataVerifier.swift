// SignedDataVerifier: decides whether a decoded App Store item may be
// delivered, the way Apple's SignedDataVerifier does (Mode=appstore), and in
// places more strictly (docs/verification.md "Signature verification").
//
// Every signed string of the item is checked: a transaction, a renewal info,
// a notification's outer signedPayload and each signed member nested in it
// (signedTransactionInfo, signedRenewalInfo, appData's
// signedAppTransactionInfo, and any `signed…` JWS Apple adds). For each, in
// order, each step an early exit with one `VerificationFailure`: header
// `alg` is ES256; `x5c` holds three certificates that chain to a configured
// root at the time the payload was signed (`signingTime`), with Apple's
// OIDs (ChainValidator, its verdicts cached by VerifiedChainCache under the
// exact header); the ES256 signature over `header.payload`; then the
// claims: bundleId, appAppleId (Production notifications and app
// transactions), environment (`check`).
// With Environment=Xcode or LocalTesting only the claims are checked.
// A StoreKit 1 receipt's purchase is checked by ReceiptVerifier, then for
// its receipt's bundle id and environment.
// Envelopes carry no signature and pass untouched (AcceptEnvelopes= decides
// whether they are decoded at all). Throws a `Rejection`; logs nothing.

/// Verifies App Store signed data under one policy. Not Sendable on
/// purpose: it owns OpenSSL state and a cache without locks, and lives on the
/// intake thread.
final class SignedDataVerifier {
    let policy: SignedDataPolicy
    /// nil when the environment's data is not signed by the App Store.
    private let validator: ChainValidator?
    private var cache: VerifiedChainCache
    /// nil when the environment's data is not signed by the App Store.
    private let receipts: ReceiptVerifier?

    /// `chainCacheCapacity` 0 validates every chain afresh.
    init(policy: SignedDataPolicy, chainCacheCapacity: Int = VerifiedChainCache.defaultCapacity) {
        self.policy = policy
        validator = policy.checksSignatures ? ChainValidator(roots: policy.roots) : nil
        cache = VerifiedChainCache(capacity: chainCacheCapacity)
        receipts = policy.checksSignatures ? ReceiptVerifier(roots: policy.receiptRoots) : nil
    }

    /// Chains currently cached (internal for testing).
    var cachedChainCount: Int { cache.count }

    /// The headers of the cached chains, whose parses the decoder may take
    /// instead of parsing them again.
    var knownHeaders: KnownJOSEHeaders { cache.headers }

    /// Verifies every signed string of `item`, outer before nested, using
    /// the decoder's parse of each where `parsed` holds it. Every string's
    /// signature is checked before a claim refused by the settings (bundle
    /// id, environment, app id) is thrown: such data is genuine and kept
    /// (the receiver spools it for rejected/), so a body that also carries
    /// a forged string must be found forged first.
    func verify(_ item: Item, parsed: ParsedSignedStrings = ParsedSignedStrings()) throws(Rejection) {
        if item.kind == .receipt || item.kind == .receiptFile {
            // A purchase read from a part carries only its receipt's name and
            // was verified with that receipt (ReceiptLibrary); an item that
            // reaches this check carries the receipt itself, or is refused.
            guard let text = item.signedStrings.first(where: { $0.name == "receipt" })?.value else {
                throw Rejection(.missingField, "the receipt's purchase carries no receipt")
            }
            if let receipt = parsed.receipt, receipt.text == text { return try verify(receipt) }
            guard let der = Base64.decode(text.utf8), let receipt = try? AppReceipt(der: der) else {
                throw Rejection(.malformedReceipt, "the receipt is not the base64 of a StoreKit 1 app receipt")
            }
            return try verify(ParsedReceipt(text: text, der: der, receipt: receipt))
        }
        // A notification's payload, verified first, for its nested members:
        // where each is, and the time a member that names none was signed.
        var notification: CompactJWS?
        var verified: [VerifiedClaims] = []
        for (name, text) in item.signedStrings {
            guard let kind = SignedDataKind(signedStringName: name) else { continue }
            let jws: CompactJWS
            if let parse = parsed.jws(named: name, text: text) {
                jws = parse
            } else {
                do {
                    jws = try CompactJWS(compact: text)
                } catch {
                    throw Rejection(error.code, "\(name) \(error)")
                }
            }
            var subject = name
            var enclosingSignedDate: Int64?
            if let notification {
                subject = NotificationPayload.place(of: name, in: notification.payload) + " of signedPayload"
                enclosingSignedDate = notification.payload["signedDate"]?.int64Value
            }
            verified.append(try verifySignature(of: jws, as: kind, subject: subject,
                                                enclosingSignedDate: enclosingSignedDate))
            if kind == .notification, notification == nil { notification = jws }
        }
        try checkClaims(verified)
    }

    /// Verifies one signed string; `subject` names it in messages.
    func verify(_ compact: String, as kind: SignedDataKind, subject: String) throws(Rejection) {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(compact: compact)
        } catch {
            throw Rejection(error.code, "\(subject) \(error)")
        }
        try checkClaims([try verifySignature(of: jws, as: kind, subject: subject)])
    }

    /// What one signed string says of its app, once its signature verified.
    private struct VerifiedClaims {
        var claims: AppClaims?
        var kind: SignedDataKind
        var subject: String
    }

    /// When the App Store signed a payload of `kind` (ms since 1970), the
    /// time its chain is validated at, and what a message calls that time:
    /// its `signedDate`, which Apple's payloads carry and which is required
    /// of the kinds txrecon knows; an app transaction names it
    /// `receiptCreationDate`; a member Apple added since that names neither
    /// was signed no later than the notification around it (`enclosing`).
    private static func signingTime(_ reader: PayloadReader, kind: SignedDataKind,
                                    enclosing: Int64?) throws(Rejection) -> (Int64, named: String) {
        switch kind {
        case .transaction, .renewalInfo, .notification:
            return (try reader.requireMilliseconds("signedDate"), "signedDate")
        case .appTransaction:
            if let signed = try reader.milliseconds("signedDate") { return (signed, "signedDate") }
            return (try reader.requireMilliseconds("receiptCreationDate"), "receiptCreationDate")
        case .unknown:
            if let signed = try reader.milliseconds("signedDate") { return (signed, "signedDate") }
            if let created = try reader.milliseconds("receiptCreationDate") { return (created, "receiptCreationDate") }
            guard let enclosing else { return (try reader.requireMilliseconds("signedDate"), "signedDate") }
            return (enclosing, "the signedDate of the notification around it")
        }
    }

    /// Throws what is wrong with `jws` itself, and returns its claims for
    /// `checkClaims`. `enclosingSignedDate`: the notification's, for a
    /// nested member.
    private func verifySignature(of jws: CompactJWS, as kind: SignedDataKind, subject: String,
                                 enclosingSignedDate: Int64? = nil) throws(Rejection) -> VerifiedClaims {
        // Built once, by concatenation, for the messages of both readers:
        // an interpolation each took about 1,900 instructions a JWS more.
        let payloadSubject = "the payload of " + subject
        let reader = PayloadReader(object: jws.payload, subject: payloadSubject)
        if let validator {
            let (signedAt, named) = try SignedDataVerifier.signingTime(reader, kind: kind,
                                                                       enclosing: enclosingSignedDate)
            do {
                try checkSignature(of: jws, at: signedAt, validator: validator)
            } catch {
                throw error.rejection(subject: subject, signingTime: named)
            }
        }
        let claims: AppClaims?
        if kind == .notification {
            claims = try AppClaims(notification: jws.payload, subject: payloadSubject)
        } else {
            claims = try AppClaims(jws.payload, kind: kind, subject: payloadSubject)
        }
        return VerifiedClaims(claims: claims, kind: kind, subject: subject)
    }

    /// The claims of an item's signed strings, every signature already
    /// verified (such data is genuine and kept: the receiver spools it for
    /// rejected/, so a body that also carries a forged string must be found
    /// forged first): the app is the one the first `bundleId` names, and
    /// each string is checked against it. Throws the first claim refused.
    private func checkClaims(_ verified: [VerifiedClaims]) throws(Rejection) {
        var verified = verified
        if let outer = verified.firstIndex(where: { $0.kind == .notification }) {
            let nested = verified.indices.filter { $0 != outer }.map { verified[$0].claims }
            verified[outer].claims = AppClaims(notification: verified[outer].claims, filledFrom: nested)
            let environment = verified[outer].claims?.environment
            for index in verified.indices where index != outer {
                // A notification inside it is a member Apple added: checked
                // for the claims it carries, as such members are.
                if verified[index].kind == .notification { verified[index].kind = .unknown }
                // Such a member that names no environment is of the
                // notification's: an appAppleId it carries is checked as
                // that environment asks (Production: against AppAppleID=).
                if verified[index].kind == .unknown, verified[index].claims?.environment == nil {
                    verified[index].claims?.environment = environment
                }
            }
        }
        let named = verified.lazy.compactMap { $0.claims?.bundleID }.first
        let app = policy.app(bundleID: named)
        for entry in verified {
            do {
                try check(entry.claims, kind: entry.kind, app: app)
            } catch {
                throw error.rejection(subject: entry.subject)
            }
        }
    }

    // MARK: - Receipts

    /// Verifies a StoreKit 1 receipt: its signature and chain at its
    /// creation date (ReceiptVerifier), then its bundle id and environment.
    func verify(_ parsed: ParsedReceipt) throws(Rejection) {
        let receipt = parsed.receipt
        if let receipts {
            if let missing = policy.receiptRootsMissing { throw Rejection(.receiptUntrustedChain, missing) }
            guard let creationDate = receipt.creationDate else {
                throw Rejection(.missingField, "the receipt has no creation date (attribute 12), the time its chain "
                    + "is validated at")
            }
            try receipts.verify(der: parsed.der, receipt: receipt, at: creationDate)
        }
        do {
            let app = policy.app(bundleID: receipt.bundleId)
            try checkBundleID(receipt.bundleId, app: app)
            try checkEnvironment(receipt.environment, app: app)
        } catch {
            throw error.rejection(subject: "the receipt")
        }
    }

    // MARK: - Signature and chain

    private func checkSignature(of jws: CompactJWS, at signedDate: Int64,
                                validator: ChainValidator) throws(VerificationFailure) {
        // Certificate times have whole seconds; OpenSSL compares in seconds.
        let time = signedDate / 1000
        let encodedHeader = jws.signingInput[..<jws.encodedHeaderCount]
        // A header spelled exactly like one whose chain passed has passed
        // the header's checks too: they read nothing else.
        if let cached = encodedHeader.withUnsafeBufferPointer({ cache.leafKey(forHeader: $0, at: time) }) {
            guard cached.isValidSignature(jws.signature, of: jws.signingInput) else { throw .invalidSignature }
            return
        }
        if jws.header["crit"] != nil { throw .criticalHeader }
        guard jws.header["alg"] == .string("ES256") else {
            throw .unsupportedAlgorithm(SignedDataVerifier.describeAlgorithm(jws.header["alg"]))
        }
        let x5c = try SignedDataVerifier.certificateStrings(jws.header["x5c"])
        let chain = try validator.validate(x5c: x5c, at: time)
        guard chain.leafKey.isValidSignature(jws.signature, of: jws.signingInput) else { throw .invalidSignature }
        // Only a header whose leaf signed this JWS is kept: anyone can copy
        // Apple's x5c into headers of their own, but not sign under them,
        // so nobody else can fill the cache (and empty it for everyone).
        cache.insert(chain, encodedHeader: Array(encodedHeader), header: jws.header)
    }

    /// The three `x5c` strings, or why there are not three.
    private static func certificateStrings(_ value: JSONValue?) throws(VerificationFailure) -> [String] {
        guard let value else { throw .invalidX5C("is missing") }
        guard case let .array(entries) = value else { throw .invalidX5C("is \(value.typeDescription), not an array") }
        guard entries.count == ChainValidator.chainLength else {
            throw .invalidX5C("holds \(entries.count) certificate\(entries.count == 1 ? "" : "s")")
        }
        var strings: [String] = []
        for (position, entry) in entries.enumerated() {
            guard case let .string(text) = entry else {
                throw .invalidX5C("has \(entry.typeDescription) at position \(position), not a string")
            }
            strings.append(text)
        }
        return strings
    }

    /// `none`, `HS256`, `missing`, `a number`: what the header's alg holds.
    private static func describeAlgorithm(_ value: JSONValue?) -> String {
        guard let value else { return "missing" }
        guard case let .string(text) = value else { return value.typeDescription }
        return text.isEmpty ? "an empty string" : LogText.singleLine(text, limit: 32)
    }

    // MARK: - Claims

    /// bundleId, appAppleId and environment, as Apple's SignedDataVerifier
    /// checks each kind, against `app`, the app the item's first bundleId
    /// names (nil when that is no app configured): renewal infos carry no
    /// bundleId, and only notifications and app transactions from
    /// Production are checked for appAppleId (App Review's sandbox
    /// notifications on a production server are not). A notification that
    /// names no app anywhere is refused as such. A member Apple added since
    /// is checked for the claims it carries, and for none it does not.
    private func check(_ claims: AppClaims?, kind: SignedDataKind, app: AppPolicy?) throws(VerificationFailure) {
        guard let claims, kind != .notification || claims.bundleID != nil else { throw .noAppNamed }
        if kind == .unknown {
            if claims.bundleID != nil { try checkBundleID(claims.bundleID, app: app) }
            // Transactions and renewal infos carry an environment and no
            // appAppleId: a member shaped like them is no other app's.
            if claims.appAppleID != nil { try checkAppAppleID(claims, app: app) }
            if claims.environment != nil { try checkEnvironment(claims.environment, app: app) }
            return
        }
        if kind != .renewalInfo { try checkBundleID(claims.bundleID, app: app) }
        if kind == .notification || kind == .appTransaction { try checkAppAppleID(claims, app: app) }
        try checkEnvironment(claims.environment, app: app)
    }

    private func checkAppAppleID(_ claims: AppClaims, app: AppPolicy?) throws(VerificationFailure) {
        if claims.environment == SignedDataEnvironment.production.rawValue, let want = app?.appAppleID,
           claims.appAppleID != want {
            throw .wrongAppAppleID(found: claims.appAppleID, want: want)
        }
    }

    /// `found` is `app`'s bundle id: the app of the item, configured.
    private func checkBundleID(_ found: String?, app: AppPolicy?) throws(VerificationFailure) {
        guard let app, found == app.bundleID else {
            let want = app.map { [$0.bundleID] } ?? policy.apps.map(\.bundleID)
            throw .wrongBundleID(found: found, want: want.joined(separator: " or "))
        }
    }

    /// An environment `app` lists; any app's, for a renewal info whose item
    /// names no app configured (its transaction's bundleId is refused then).
    private func checkEnvironment(_ found: String?, app: AppPolicy?) throws(VerificationFailure) {
        let environments = app?.environments ?? policy.apps.flatMap(\.environments)
        guard let found, let environment = SignedDataEnvironment(rawValue: found),
              environments.contains(environment) else {
            var wanted: [String] = []
            for environment in environments.map(\.rawValue) where !wanted.contains(environment) {
                wanted.append(environment)
            }
            throw .wrongEnvironment(found: found, want: wanted.joined(separator: " or "))
        }
    }
}

extension InputDecoder {
    /// The receiver's step for one body: decode it, then verify an item's
    /// signed strings with `verifier` (none in Mode=none), each JWS parsed
    /// once. A part of a receipt upload is refused: it names a receipt in
    /// the daemon's receipts/, which the receiver never reads.
    func decode(_ bytes: [UInt8], verifyingWith verifier: SignedDataVerifier?) throws(Rejection) -> DecodedInput {
        var novelties: [AppleNovelty] = []
        return try decode(bytes, verifyingWith: verifier, novelties: &novelties)
    }

    /// Like `decode(_:verifyingWith:)`, and sets `novelties` to what the
    /// item holds that this release does not know.
    func decode(_ bytes: [UInt8], verifyingWith verifier: SignedDataVerifier?,
                novelties: inout [AppleNovelty]) throws(Rejection) -> DecodedInput {
        var parsed = ParsedSignedStrings(knownHeaders: verifier?.knownHeaders)
        let decoded = try decode(bytes, parsed: &parsed)
        if case .receiptPart = decoded {
            throw Rejection(.receiptNotStored, "a receipt part (\(InputDecoder.receiptNameMember)) names a receipt "
                + "txrecon stored in its spool, which only the daemon's intake reads; upload the receipt itself, "
                + "{\"receipt\": \"<base64>\"} (format 6)")
        }
        try verify(decoded, parsed: parsed, with: verifier, novelties: &novelties)
        return decoded
    }

    /// Intake's and the engines' step for one file: decoded and verified as
    /// above, and a part of a receipt upload read through `receipts`
    /// (receipts/, its receipt verified there) into the purchase it names.
    /// Throws `.rejected` for what is wrong with the file, `.unreadable`
    /// when its receipt could not be read for the moment.
    func decode(_ bytes: [UInt8], verifyingWith verifier: SignedDataVerifier?, receipts: ReceiptLibrary,
                novelties: inout [AppleNovelty]) throws(ItemReadFailure) -> VerifiedInput {
        var parsed = ParsedSignedStrings(knownHeaders: verifier?.knownHeaders)
        let decoded: DecodedInput
        do throws(Rejection) {
            decoded = try decode(bytes, parsed: &parsed)
            try verify(decoded, parsed: parsed, with: verifier, novelties: &novelties)
        } catch {
            throw .rejected(error)
        }
        switch decoded {
        case let .item(item): return .item(item)
        case let .page(transactions): return .page(signedTransactions: transactions)
        case let .receipt(split): return .receipt(split)
        case let .receiptPart(part): return .item(try receipts.item(for: part, verifier: verifier))
        }
    }

    /// `decode(_:verifyingWith:receipts:novelties:)` for a caller that does
    /// not look at novelties.
    func decode(_ bytes: [UInt8], verifyingWith verifier: SignedDataVerifier?,
                receipts: ReceiptLibrary) throws(ItemReadFailure) -> VerifiedInput {
        var novelties: [AppleNovelty] = []
        return try decode(bytes, verifyingWith: verifier, receipts: receipts, novelties: &novelties)
    }

    /// Verifies what `decode` found: an item's signed strings, or a receipt
    /// upload whole, before anything of it is stored or split (a forged
    /// receipt costs no more than its own bytes, and writes nothing). A
    /// part has no signature of its own: its receipt is verified when read.
    private func verify(_ decoded: DecodedInput, parsed: ParsedSignedStrings, with verifier: SignedDataVerifier?,
                        novelties: inout [AppleNovelty]) throws(Rejection) {
        switch decoded {
        case let .item(item): try verifier?.verify(item, parsed: parsed)
        case .receipt:
            if let verifier {
                // The decoder records every receipt it takes apart; should it
                // not, the upload is refused, never passed unchecked.
                guard let receipt = parsed.receipt else {
                    throw Rejection(.invalidReceiptSignature, "the receipt's signature could not be checked")
                }
                try verifier.verify(receipt)
            }
        case .receiptPart, .page: break
        }
        // Only what Apple signed tells the operator that Apple added
        // something: unverified (Mode=none), the names are anyone's, each a
        // warning and a metric series of its own, without bound.
        novelties = verifier == nil ? [] : parsed.novelties
    }
}
