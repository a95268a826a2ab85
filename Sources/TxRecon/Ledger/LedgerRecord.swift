// LedgerRecord: one destination's confirmation of one snapshot, as the
// ledger keeps it: which version, when, on which attempt, under which
// idempotency key, how the destination confirmed it, and the item's
// identity as decoded and verified (what `txrecon history` searches by and
// reconciliation with Apple reads). Values only; reports nothing.

package struct LedgerRecord: Sendable, Equatable {
    /// `backend` for `[Backend]`, else the destination's name.
    package var destination: String
    package var key: ItemKey
    package var version: ItemVersion
    /// When the destination confirmed it, ms since 1970.
    package var confirmedAt: Int64
    /// 1 for the first attempt.
    package var attempt: Int
    /// `HTTP 204`, `stream ORDERS sequence 42`.
    package var confirmation: String
    package var kind: ItemKind
    package var identity: Identity

    /// `Idempotency-Key` (`Nats-Msg-Id`) of that attempt: every attempt of
    /// a snapshot sends the same, made from key and version, so the ledger
    /// derives it rather than keep a copy per row.
    package var idempotencyKey: String { RequestBuilder.idempotencyKey(key: key, version: version) }

    /// What the item is about, as intake decoded and verified it; nil
    /// where the item does not say (an envelope says nothing).
    package struct Identity: Sendable, Equatable {
        package var transactionId: String?
        package var originalTransactionId: String?
        /// Apple's one id per Apple Account that downloaded the app.
        package var appTransactionId: String?
        package var appAccountToken: String?
        package var productId: String?
        package var bundleId: String?
        package var environment: String?
        /// A subscription's, ms since 1970.
        package var expiresDate: Int64?
        package var webOrderLineItemId: String?
        package var notificationType: String?
        package var subtype: String?
        /// `ContentDigest` of the transaction and of the renewal info the
        /// destination confirmed (nil: the item had none, or was recorded
        /// before schema 3): what reconciliation compares Apple's answers with.
        package var transactionDigest: Int64?
        package var renewalDigest: Int64?

        init(transactionId: String? = nil, originalTransactionId: String? = nil, appTransactionId: String? = nil,
             appAccountToken: String? = nil, productId: String? = nil, bundleId: String? = nil,
             environment: String? = nil, expiresDate: Int64? = nil, webOrderLineItemId: String? = nil,
             notificationType: String? = nil, subtype: String? = nil, transactionDigest: Int64? = nil,
             renewalDigest: Int64? = nil) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.appTransactionId = appTransactionId
            self.appAccountToken = appAccountToken
            self.productId = productId
            self.bundleId = bundleId
            self.environment = environment
            self.expiresDate = expiresDate
            self.webOrderLineItemId = webOrderLineItemId
            self.notificationType = notificationType
            self.subtype = subtype
            self.transactionDigest = transactionDigest
            self.renewalDigest = renewalDigest
        }

        init(_ fields: ItemFields) {
            self.init(transactionId: fields.transactionId, originalTransactionId: fields.originalTransactionId,
                      appTransactionId: fields.appTransactionId, appAccountToken: fields.appAccountToken,
                      productId: fields.productId, bundleId: fields.bundleId, environment: fields.environment,
                      expiresDate: fields.expiresDate, webOrderLineItemId: fields.webOrderLineItemId,
                      notificationType: fields.notificationType, subtype: fields.subtype,
                      transactionDigest: fields.transactionDigest, renewalDigest: fields.renewalDigest)
        }
    }

    init(destination: String, key: ItemKey, version: ItemVersion, confirmedAt: Int64, attempt: Int,
         confirmation: String, kind: ItemKind, identity: Identity) {
        self.destination = destination
        self.key = key
        self.version = version
        self.confirmedAt = confirmedAt
        self.attempt = attempt
        self.confirmation = confirmation
        self.kind = kind
        self.identity = identity
    }
}
