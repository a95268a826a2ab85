// InputDecoder: the bytes of one spool file → one item, one transaction
// history page, a receipt upload or a part of one, or a rejection
// (docs/input-formats.md "Input formats", formats 1 to 6).
//
// Runs on the intake hot path, so it works on bytes: no Foundation, one JSON
// parse per document, base64url decoded by hand. Signatures are not checked
// here (that is the verifier's step); every JWS is still parsed strictly so
// that the verifier sees the same bytes. Nothing a producer sent is dropped
// silently: unknown top-level members of formats 2 and 5 are refused, and
// those of an app's upload (format 3) are its context, delivered labelled
// as unverified.
// Every refusal is thrown as a `Rejection` with a stable code and one
// sentence naming the format tried, what was wrong and, where it helps, what
// to do. Touches no files and logs nothing.
import Glibc

/// Decodes one dropped file. Immutable and free of shared state: one value
/// may decode on any number of threads at once.
struct InputDecoder: Sendable {
    /// Whether generic envelopes (format 5) are accepted; default true.
    /// When false they are refused with `envelopes-disabled`.
    var acceptEnvelopes: Bool

    init(acceptEnvelopes: Bool = true) {
        self.acceptEnvelopes = acceptEnvelopes
    }

    /// Decodes the whole content of one spool file; trailing spaces, tabs,
    /// CRs and LFs are ignored.
    func decode(_ bytes: some Collection<UInt8>) throws(Rejection) -> DecodedInput {
        var parsed = ParsedSignedStrings()
        return try decode(bytes, parsed: &parsed)
    }

    /// Decodes like `decode(_:)` and records in `parsed` the JWS parsed for
    /// an item's signed strings, for the verifier.
    func decode(_ bytes: some Collection<UInt8>, parsed: inout ParsedSignedStrings) throws(Rejection) -> DecodedInput {
        let input = Array(bytes)
        var end = input.count
        while end > 0, InputDecoder.isWhitespace(input[end - 1]) { end -= 1 }
        guard let first = input[..<end].first(where: { !InputDecoder.isWhitespace($0) }) else {
            throw Rejection(.emptyFile, "the file is empty or holds only whitespace; "
                + "drop one transaction, notification or envelope per file")
        }
        if input.starts(with: InputDecoder.byteOrderMark) {
            throw Rejection(.notJSON, "the file starts with a UTF-8 byte order mark, which JSON (RFC 8259) and "
                + "compact JWS do not allow; write the file without it")
        }
        switch first {
        case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\""), UInt8(ascii: "-"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try decodeJSON(input, parsed: &parsed)
        default:
            let hasSeparator = input.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { memchr($0, Int32(UInt8(ascii: ".")), end) != nil } ?? false
            }
            if hasSeparator { return try decodeBareJWS(input[..<end], parsed: &parsed) }
            if let receipt = Base64.decode(input[..<end]), receipt.first == DERElement.sequence {
                let text = String(decoding: input[..<end], as: UTF8.self)
                return try decodeReceipt(der: receipt, text: text, upload: nil, parsed: &parsed)
            }
            // "MII": the base64 of a DER SEQUENCE of 256 bytes or more, as
            // every receipt starts; one that did not decode was spoiled on
            // the way, and "not JSON" would send its producer elsewhere.
            if input[..<end].starts(with: "MII".utf8) {
                throw Rejection(.malformedReceipt, "the file starts like a base64 receipt (format 6) but is not the "
                    + "standard base64 of one: a '+' turned into a space by form decoding, the URL-safe alphabet, or "
                    + "a file cut short; send the app receipt's bytes as Data.base64EncodedString() gives them")
            }
            // `true`, `null`: JSON, but no format; anything else: neither.
            guard let value = try? JSONValue.parse(input) else {
                throw Rejection(.notJSON, "the file is neither a compact JWS (format 1: three base64url "
                    + "segments joined by '.') nor JSON (formats 2 to 5); see docs/input-formats.md \"Input formats\"")
            }
            throw InputDecoder.notAnObject(value)
        }
    }

    // MARK: - Format 1: a bare compact JWS

    private func decodeBareJWS(_ bytes: ArraySlice<UInt8>,
                               parsed: inout ParsedSignedStrings) throws(Rejection) -> DecodedInput {
        let jws = try InputDecoder.parseJWS(bytes, subject: "the file, read as a compact JWS (format 1),",
                                            knownHeaders: parsed.knownHeaders)
        // The parse proved the bytes are base64url and dots: ASCII.
        let text = String(decoding: bytes, as: UTF8.self)
        let payload = jws.payload
        if payload["transactionId"] != nil {
            let transaction = try TransactionPayload(payload, subject: "the transaction in the file (format 1)")
            var fields = ItemFields()
            transaction.fill(&fields)
            fields.transactionDigest = ContentDigest.of(payload)
            parsed.record(jws, name: "signedTransactionInfo", text: text)
            return .item(Item(key: transaction.transactionId, version: transaction.version(), kind: .transaction,
                              fields: fields, signedStrings: [("signedTransactionInfo", text)],
                              decodedPayloads: [(SignedDataKind.decodedName(ofSignedString: "signedTransactionInfo"),
                                                 jws.payloadJSON)]))
        }
        if payload["notificationType"] != nil {
            // Notifications are often stored as the bare signedPayload: take it as format 2.
            return .item(try notificationItem(jws, signedPayload: text, origin: "the file (format 1)", parsed: &parsed))
        }
        if payload["autoRenewStatus"] != nil || payload["autoRenewProductId"] != nil {
            throw Rejection(.unsupportedContent, "the file is a signed renewal info alone, which has no transactionId "
                + "to deliver under; drop it together with its transaction as {\"signedTransactionInfo\": \"…\", "
                + "\"signedRenewalInfo\": \"…\"} (format 3)")
        }
        if payload["receiptType"] != nil || payload["applicationVersion"] != nil {
            throw Rejection(.unsupportedContent, "the file is a signed app transaction (AppTransaction), which "
                + "proves the purchase of the app itself; txrecon delivers in-app transactions and notifications")
        }
        throw Rejection(.missingField, "the JWS payload in the file (format 1) has neither transactionId "
            + "(a signed transaction) nor notificationType (a signed notification)")
    }

    // MARK: - Formats 2 to 5: JSON objects

    private func decodeJSON(_ input: [UInt8], parsed: inout ParsedSignedStrings) throws(Rejection) -> DecodedInput {
        var value: JSONValue
        let payload: JSONValue.SetAside?
        do {
            // An envelope's payload is sent as the file holds it: checked
            // here, not built (JSONValue.parse(_:settingAside:)).
            (value, payload) = try JSONValue.parse(input, settingAside: "payload")
        } catch {
            throw Rejection(.notJSON, "the file starts like JSON (formats 2 to 5) but is not valid JSON: \(error)")
        }
        guard case var .object(members) = value else { throw InputDecoder.notAnObject(value) }
        if let payload, !InputDecoder.isEnvelope(value) {
            // A member named `payload` beside another format's: put back
            // where it was, to be judged as any other member. It parsed
            // once already, so it parses again.
            members.insert(("payload", (try? JSONValue.parse(input[payload.range])) ?? .null), at: payload.position)
            value = .object(members)
        }
        if value["signedPayload"] != nil { return .item(try decodeNotificationBody(value, parsed: &parsed)) }
        if value["signedTransactionInfo"] != nil { return .item(try decodeTransactionUpload(value, parsed: &parsed)) }
        if value["signedTransactions"] != nil { return try decodeHistoryPage(value) }
        if value["receipt"] != nil { return try decodeReceiptUpload(value, parsed: &parsed) }
        if value[InputDecoder.receiptNameMember] != nil { return try decodeReceiptPart(value) }
        // None of the other formats' members is here: an `id`, a `version`
        // (the payload set aside) or a `payload` put back makes an envelope.
        if value["id"] != nil || value["version"] != nil || value["payload"] != nil {
            return .item(try decodeEnvelope(value, payloadText: payload.map { Array(input[$0.range]) }))
        }
        if value["signedRenewalInfo"] != nil {
            throw Rejection(.unsupportedContent, "the file holds a signedRenewalInfo without a signedTransactionInfo; "
                + "a renewal info is delivered only together with its transaction (format 3)")
        }
        throw Rejection(.unknownFormat, "a JSON object with none of signedPayload, signedTransactionInfo, "
            + "signedTransactions or id/version/payload; see docs/input-formats.md \"Input formats\"")
    }

    /// Format 2: `{"signedPayload": "<JWS>"}`, an App Store Server Notifications V2 body.
    private func decodeNotificationBody(_ value: JSONValue, parsed: inout ParsedSignedStrings) throws(Rejection) -> Item {
        let format = "an App Store Server Notification body (format 2)"
        try InputDecoder.refuseOtherMembers(of: value, allowed: ["signedPayload"], format: format)
        let reader = PayloadReader(object: value, subject: format)
        let text = try reader.requireString("signedPayload")
        let jws = try InputDecoder.parseJWS(text, subject: "signedPayload (format 2)", knownHeaders: parsed.knownHeaders)
        return try notificationItem(jws, signedPayload: text, origin: "signedPayload (format 2)", parsed: &parsed)
    }

    /// Format 3: `{"signedTransactionInfo": "<JWS>", "signedRenewalInfo": "<JWS>"?, …}`;
    /// any other member is the app's context.
    private func decodeTransactionUpload(_ value: JSONValue, parsed: inout ParsedSignedStrings) throws(Rejection) -> Item {
        let format = "a signed transaction upload (format 3)"
        let signedNames = ["signedTransactionInfo", "signedRenewalInfo"]
        let context = try InputDecoder.context(of: value, besides: signedNames, format: format)
        let reader = PayloadReader(object: value, subject: format)
        let transactionText = try reader.requireString("signedTransactionInfo")
        let transactionJWS = try InputDecoder.parseJWS(transactionText, subject: "signedTransactionInfo (format 3)",
                                                       knownHeaders: parsed.knownHeaders)
        let transaction = try TransactionPayload(transactionJWS.payload,
                                                 subject: "the transaction in signedTransactionInfo (format 3)")
        parsed.record(transactionJWS, name: "signedTransactionInfo", text: transactionText)
        var decoded = [("signedTransactionInfo", transactionJWS.payloadJSON)]
        var fields = ItemFields()
        transaction.fill(&fields)
        fields.transactionDigest = ContentDigest.of(transactionJWS.payload)
        if let renewalText = try reader.string("signedRenewalInfo") {
            let renewal = try InputDecoder.parseJWS(renewalText, subject: "signedRenewalInfo (format 3)",
                                                    knownHeaders: parsed.knownHeaders)
            try InputDecoder.checkRenewal(renewal.payload, belongsTo: transaction)
            parsed.record(renewal, name: "signedRenewalInfo", text: renewalText)
            decoded.append(("signedRenewalInfo", renewal.payloadJSON))
            fields.renewalDigest = ContentDigest.of(renewal.payload)
        }
        // Keep the producer's member order: the backend sees what was dropped.
        let signedStrings = (value.objectValue ?? []).compactMap { member in
            signedNames.contains(member.0) ? member.1.stringValue.map { (name: member.0, value: $0) } : nil
        }
        let decodedPayloads = signedStrings.compactMap { signed in
            decoded.first { $0.0 == signed.name }.map { (SignedDataKind.decodedName(ofSignedString: $0.0), $0.1) }
        }
        return Item(key: transaction.transactionId, version: transaction.version(), kind: .transaction,
                    fields: fields, signedStrings: signedStrings, decodedPayloads: decodedPayloads, context: context)
    }

    /// The largest context an upload may carry, serialized: an order id, a
    /// user id and `applicationUsername` take a few hundred bytes.
    static let maximumContextSize = 4096

    /// The members of an upload besides `signedNames`, as one object; nil
    /// when there are none. Larger than `maximumContextSize`, the upload is
    /// refused rather than delivered without what the app sent.
    static func context(of value: JSONValue, besides signedNames: [String],
                                format: String) throws(Rejection) -> JSONValue? {
        let members = (value.objectValue ?? []).filter { !signedNames.contains($0.0) }
        guard !members.isEmpty else { return nil }
        let context = JSONValue.object(members)
        let size = context.serialized.count
        guard size <= maximumContextSize else {
            throw Rejection(.contextTooLarge, "the members of \(format) besides \(signedNames.joined(separator: " and ")) "
                + "(the app's context, delivered as unverified) take \(size) bytes, more than \(maximumContextSize); "
                + "send an order id or a user id, not a document")
        }
        // JSON puts no bound on a number; the backend's reader does (Go's
        // float64, Python's 4,300 digits). Delivered, `1e400` would make
        // the body unreadable there, and the genuine transaction beside it
        // would be held for an operator: refused here, while the app can
        // still send it again without.
        if let number = firstUnboundedNumber(in: context) {
            throw Rejection(.invalidField, "the app's context in \(format) holds the number "
                + "\(number.prefix(40))\(number.count > 40 ? "…" : ""), which no double holds and many JSON "
                + "readers refuse; send it as a string")
        }
        return context
    }

    /// The first number in `value` that is not a finite double.
    private static func firstUnboundedNumber(in value: JSONValue) -> String? {
        switch value {
        case .number(let text):
            return Double(text).map(\.isFinite) == true ? nil : text
        case .array(let elements):
            for element in elements { if let found = firstUnboundedNumber(in: element) { return found } }
            return nil
        case .object(let members):
            for (_, member) in members { if let found = firstUnboundedNumber(in: member) { return found } }
            return nil
        case .null, .bool, .string:
            return nil
        }
    }

    /// Format 4: a transaction history page; each element must be a compact
    /// JWS of a transaction, so that a bad page is refused as a whole before
    /// it is split.
    private func decodeHistoryPage(_ value: JSONValue) throws(Rejection) -> DecodedInput {
        let reader = PayloadReader(object: value, subject: "a transaction history page (format 4)")
        let member = try reader.require("signedTransactions")
        guard case let .array(elements) = member else {
            throw reader.invalid("signedTransactions", member, expected: "an array of compact JWS strings")
        }
        guard !elements.isEmpty else {
            throw Rejection(.emptyPage, "signedTransactions of a transaction history page (format 4) is empty, "
                + "so there is nothing to deliver; drop only pages that hold transactions")
        }
        var signedTransactions: [String] = []
        signedTransactions.reserveCapacity(elements.count)
        for (position, element) in elements.enumerated() {
            let name = "signedTransactions[\(position)]"
            guard case let .string(text) = element else {
                throw reader.invalid(name, element, expected: "a string (a compact JWS)")
            }
            let jws = try InputDecoder.parseJWS(text, subject: "\(name) (format 4)")
            _ = try TransactionPayload(jws.payload, subject: "the transaction in \(name) (format 4)")
            signedTransactions.append(text)
        }
        return .page(signedTransactions: signedTransactions)
    }

    /// Format 5: `{"id": "<key>", "version": <integer ≥ 0>, "payload": <any JSON>}`.
    /// Whether an object is the envelope (format 5) rather than another
    /// format: none of the other formats' members, and one of its own
    /// beside `payload`, which `value` may lack (set aside by the parser).
    private static func isEnvelope(_ value: JSONValue) -> Bool {
        value["signedPayload"] == nil && value["signedTransactionInfo"] == nil && value["signedTransactions"] == nil
            && value["receipt"] == nil && value[InputDecoder.receiptNameMember] == nil
            && (value["id"] != nil || value["version"] != nil)
    }

    /// `payloadText`: the payload's bytes as the file holds them, when the
    /// parser set them aside (then `value` has no `payload` member).
    private func decodeEnvelope(_ value: JSONValue, payloadText: [UInt8]?) throws(Rejection) -> Item {
        guard acceptEnvelopes else {
            throw Rejection(.envelopesDisabled, "the file is a generic envelope (format 5), which this configuration "
                + "does not accept; set AcceptEnvelopes=yes in the [Verification] section to accept envelopes")
        }
        let format = "the envelope (format 5)"
        try InputDecoder.refuseOtherMembers(of: value, allowed: ["id", "version", "payload"], format: format)
        let reader = PayloadReader(object: value, subject: format)
        let key = try reader.requireKey("id")
        let versionValue = try reader.require("version")
        guard let version = versionValue.int64Value, version >= 0 else {
            throw reader.invalid("version", versionValue, expected: "an integer from 0 to \(Int64.max)")
        }
        if let payloadText, value["payload"] == nil {
            return Item(key: key, version: ItemVersion(primary: version), payloadText: payloadText)
        }
        let payload = try reader.require("payload")
        return Item(key: key, version: ItemVersion(primary: version), kind: .envelope, payload: payload)
    }

    // MARK: - Shared steps

    /// Builds the item of a notification. With a transaction inside, it is
    /// keyed and versioned by that transaction (its fields, `signedDate`
    /// included, are the transaction's); without one (a summary, a
    /// consent withdrawn, a type Apple added since), by its own
    /// notificationUUID and signedDate. `origin` names where its
    /// signedPayload came from.
    private func notificationItem(_ jws: CompactJWS, signedPayload: String, origin: String,
                                  parsed: inout ParsedSignedStrings) throws(Rejection) -> Item {
        let subject = "the notification in \(origin)"
        let notification = try NotificationPayload(jws.payload, subject: subject)
        parsed.record(jws, name: "signedPayload", text: signedPayload)
        var transaction: TransactionPayload?
        var digests: (transaction: Int64?, renewal: Int64?)
        var decodedPayloads = [(SignedDataKind.decodedName(ofSignedString: "signedPayload"), jws.payloadJSON)]
        var nestedClaims: [AppClaims?] = []
        for (name, text) in notification.nestedSignedStrings {
            let place = NotificationPayload.place(of: name, in: jws.payload) + " of \(origin)"
            let nested = try InputDecoder.parseJWS(text, subject: place, knownHeaders: parsed.knownHeaders)
            if name == "signedTransactionInfo" {
                transaction = try TransactionPayload(nested.payload, subject: "the transaction in \(place)")
                digests.transaction = ContentDigest.of(nested.payload)
            } else if name == "signedRenewalInfo" {
                digests.renewal = ContentDigest.of(nested.payload)
            }
            parsed.record(nested, name: name, text: text)
            decodedPayloads.append((SignedDataKind.decodedName(ofSignedString: name), nested.payloadJSON))
            if let kind = SignedDataKind(signedStringName: name) {
                nestedClaims.append(try AppClaims(nested.payload, kind: kind, subject: "the payload of \(place)"))
            }
        }
        let claims = AppClaims(notification: notification.claims, filledFrom: nestedClaims)
        parsed.novelties = notification.novelties
        var fields = ItemFields()
        let key: ItemKey
        let version: ItemVersion
        if let transaction {
            transaction.fill(&fields)
            fields.transactionDigest = digests.transaction
            fields.renewalDigest = digests.renewal
            fields.bundleId = transaction.bundleId ?? claims?.bundleID
            fields.environment = transaction.environment ?? claims?.environment
            key = transaction.transactionId
            version = transaction.version(notificationSignedDate: notification.signedDate)
        } else {
            fields.bundleId = claims?.bundleID
            fields.environment = claims?.environment
            fields.signedDate = notification.signedDate
            key = try PayloadReader(object: jws.payload, subject: subject).requireKey("notificationUUID")
            version = ItemVersion(primary: notification.signedDate)
        }
        fields.notificationType = notification.notificationType
        fields.subtype = notification.subtype
        fields.notificationUUID = notification.notificationUUID
        return Item(key: key, version: version, kind: .notification, fields: fields,
                    signedStrings: [("signedPayload", signedPayload)] + notification.nestedSignedStrings,
                    decodedPayloads: decodedPayloads)
    }

    /// Refuses a renewal info that is really a transaction, or that belongs to
    /// another subscription than the transaction it was dropped with.
    private static func checkRenewal(_ renewal: JSONValue, belongsTo transaction: TransactionPayload) throws(Rejection) {
        if renewal["transactionId"] != nil {
            throw Rejection(.invalidField, "signedRenewalInfo (format 3) holds a transaction (it has a transactionId), "
                + "not a renewal info; put a transaction in signedTransactionInfo")
        }
        let reader = PayloadReader(object: renewal, subject: "the renewal info in signedRenewalInfo (format 3)")
        if let renewalOriginal = try reader.string("originalTransactionId"),
           let transactionOriginal = transaction.originalTransactionId, renewalOriginal != transactionOriginal {
            throw Rejection(.invalidField, "signedRenewalInfo (format 3) belongs to originalTransactionId "
                + "\(renewalOriginal), but signedTransactionInfo to \(transactionOriginal); drop a renewal info "
                + "only with a transaction of the same subscription")
        }
    }

    /// Parses a compact JWS; `subject` names it as the subject of the
    /// sentence. A header spelled like one of `knownHeaders` is not parsed again.
    private static func parseJWS(_ compact: some Collection<UInt8>, subject: String,
                                 knownHeaders: KnownJOSEHeaders? = nil) throws(Rejection) -> CompactJWS {
        do {
            return try CompactJWS(compact: compact, knownHeaders: knownHeaders)
        } catch {
            throw Rejection(error.code, "\(subject) \(error)")
        }
    }

    private static func parseJWS(_ compact: String, subject: String,
                                 knownHeaders: KnownJOSEHeaders? = nil) throws(Rejection) -> CompactJWS {
        try parseJWS(compact.utf8, subject: subject, knownHeaders: knownHeaders)
    }

    /// Refuses any top-level member outside `allowed`, so nothing is dropped silently.
    private static func refuseOtherMembers(of value: JSONValue, allowed: [String], format: String) throws(Rejection) {
        for (name, _) in value.objectValue ?? [] where !allowed.contains(name) {
            let names = allowed.joined(separator: ", ")
            throw Rejection(.unexpectedMember, "the member \"\(name)\" is not part of \(format), which has only "
                + "\(names); remove it, or wrap the data in a generic envelope (format 5)")
        }
    }

    private static func notAnObject(_ value: JSONValue) -> Rejection {
        Rejection(.unknownFormat, "the file is JSON but \(value.typeDescription), not an object; formats 2 to 5 "
            + "are JSON objects and format 1 is a bare compact JWS; see docs/input-formats.md \"Input formats\"")
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
    }
}
