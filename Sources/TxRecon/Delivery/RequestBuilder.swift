// RequestBuilder: the HTTP request for one delivery attempt of an item, per
// the delivery contract (headers, Standard Webhooks signature, JSON body).
//
// On the hot path (thousands of attempts a second): one pass over the item,
// one buffer for the body, no clock and no I/O. The caller passes every
// instant in. Nothing is thrown or logged; secrets go only into headers,
// never into the body.

/// Builds `DeliveryRequest`s for one software version and one set of secrets
/// (rebuild it when the secrets are reloaded).
package struct RequestBuilder: Sendable {
    /// `txrecon/<version>`
    let userAgent: String
    /// `Bearer <token>`, or nil to send no Authorization header.
    private let authorization: String?
    private let signer: WebhookSigner?

    /// `softwareVersion` goes into `User-Agent`; `secrets` decide whether
    /// requests carry `Authorization` and Standard Webhooks signatures.
    package init(softwareVersion: String, secrets: BackendSecrets) {
        userAgent = "txrecon/" + softwareVersion
        authorization = secrets.bearerToken.map { "Bearer " + $0 }
        signer = secrets.webhookSigningKey.map(WebhookSigner.init(key:))
    }

    /// The request for attempt number `attempt` (1 for the first) of `item`,
    /// which intake accepted at `receivedAt` (ms since 1970). `signedAt`
    /// (seconds since 1970) becomes `webhook-timestamp`: pass the current
    /// time, since receivers refuse signatures older than a few minutes.
    package func request(for item: Item, attempt: Int, receivedAt: Int64, signedAt: Int64) -> DeliveryRequest {
        let body = Self.body(for: item, attempt: attempt, receivedAt: receivedAt)
        let idempotencyKey = Self.idempotencyKey(for: item)
        // Room for every header at once, not an array of three regrown.
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(7)
        headers.append(("Content-Type", "application/json"))
        headers.append(("User-Agent", userAgent))
        headers.append(("Idempotency-Key", idempotencyKey))
        if let authorization {
            headers.append(("Authorization", authorization))
        }
        if let signer {
            // The id is the same for every attempt of this snapshot, so a
            // receiver can recognise retries; timestamp and signature are new.
            headers.append(("webhook-id", idempotencyKey))
            headers.append(("webhook-timestamp", String(signedAt)))
            headers.append(("webhook-signature", signer.signature(id: idempotencyKey, timestamp: signedAt, body: body)))
        }
        return DeliveryRequest(headers: headers, body: body, key: item.key)
    }

    /// `<key>:<version>`, e.g. `2000000123456789:1690000000000r`. Bytes that
    /// are not visible ASCII, and `%` itself, are written as `%XX` so that any
    /// key makes a valid header value; transaction ids and UUIDs never need it.
    static func idempotencyKey(for item: Item) -> String {
        idempotencyKey(key: item.key, version: item.version)
    }

    /// The same for a snapshot known by its key and version alone (the
    /// ledger's row, which keeps no copy of it).
    static func idempotencyKey(key itemKey: ItemKey, version: ItemVersion) -> String {
        let key = itemKey.rawValue
        let suffix = ":" + version.description
        // In place (StringBytes): through the UTF8View's iterator this check
        // cost more than building the key.
        guard key.withUTF8Bytes({ $0.contains { !isPlainHeaderByte($0) } }) else { return key + suffix }
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        for byte in key.utf8 {
            if isPlainHeaderByte(byte) {
                encoded.append(byte)
            } else {
                encoded.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        return String(decoding: encoded, as: UTF8.self) + suffix
    }

    private static func isPlainHeaderByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "%")
    }

    /// The JSON body. Members come in a fixed order: `id`, `version`
    /// (integer), `versionToken` (as in Idempotency-Key), `kind`, `attempt`,
    /// `receivedAt` (RFC 3339 UTC), the decoded fields that are set (a
    /// receipt's purchase and the receipt item: `receiptSha256`), every
    /// original signed string under its Apple name (`receipt` for the
    /// receipt item: the standard base64 of its bytes), each one's payload decoded
    /// (`transaction`, `renewalInfo`, `notification`, `appTransaction`,
    /// `decoded…`: Apple's JSON byte for byte), `payload` for
    /// envelopes (byte for byte as the file holds it, when read from one),
    /// and `unverified`: the app's context, which Apple did not sign.
    static func body(for item: Item, attempt: Int, receivedAt: Int64) -> [UInt8] {
        let signedLength = item.signedStrings.reduce(0) { $0 + $1.value.utf8.count }
            + item.decodedPayloads.reduce(0) { $0 + $1.name.utf8.count + $1.json.count + 4 }
        var body = JSONObjectWriter(reservingCapacity: 768 + signedLength + (item.payloadText?.count ?? 0))
        body.add("id", item.key.rawValue)
        body.add("version", item.version.primary)
        body.add("versionToken", item.version.description)
        body.add("kind", item.kind.rawValue)
        body.add("attempt", Int64(attempt))
        body.add("receivedAt", timestamp: receivedAt)
        let fields = item.fields
        func add(_ name: StaticString, _ value: String?) {
            if let value { body.add(name, value) }
        }
        func add(_ name: StaticString, _ value: Int64?) {
            if let value { body.add(name, value) }
        }
        add("transactionId", fields.transactionId)
        add("originalTransactionId", fields.originalTransactionId)
        add("productId", fields.productId)
        add("appAccountToken", fields.appAccountToken)
        add("bundleId", fields.bundleId)
        add("environment", fields.environment)
        add("signedDate", fields.signedDate)
        add("revocationDate", fields.revocationDate)
        add("notificationType", fields.notificationType)
        add("subtype", fields.subtype)
        add("notificationUUID", fields.notificationUUID)
        add("appTransactionId", fields.appTransactionId)
        add("purchaseDate", fields.purchaseDate)
        add("originalPurchaseDate", fields.originalPurchaseDate)
        add("expiresDate", fields.expiresDate)
        add("quantity", fields.quantity)
        add("webOrderLineItemId", fields.webOrderLineItemId)
        if let flag = fields.isTrialPeriod { body.add("isTrialPeriod", .bool(flag)) }
        if let flag = fields.isInIntroOfferPeriod { body.add("isInIntroOfferPeriod", .bool(flag)) }
        add("receiptSha256", fields.receiptSha256)
        for (name, value) in item.signedStrings {
            body.add(named: name, value)
        }
        for (name, json) in item.decodedPayloads {
            body.add(named: name, json: json)
        }
        if let text = item.payloadText {
            body.add("payload", json: text)
        } else if let payload = item.payload {
            body.add("payload", payload)
        }
        if let context = item.context {
            body.add("unverified", context)
        }
        return body.finish()
    }
}
