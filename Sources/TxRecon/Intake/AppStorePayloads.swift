// AppStorePayloads: the members of Apple's decoded JWS payloads that txrecon
// reads, and how they make an item's key, version and fields.
//
// Member names are Apple's own. Only what delivery needs is read; the signed
// strings travel to the backend verbatim, so nothing else is lost. Missing or
// mistyped members are thrown as `missing-field` / `invalid-field`
// rejections naming the member and where it was read; nothing is logged.

/// The members of a JWSTransactionDecodedPayload that txrecon reads.
/// https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload
struct TransactionPayload: Sendable {
    /// The `transactionId`: the item key.
    var transactionId: ItemKey
    var originalTransactionId: String?
    var productId: String?
    var appAccountToken: String?
    var bundleId: String?
    var environment: String?
    /// When the App Store signed this snapshot, ms since 1970.
    var signedDate: Int64
    /// When the App Store refunded or revoked the transaction, ms since 1970.
    var revocationDate: Int64?

    /// Reads `payload`; `subject` names it in messages, e.g.
    /// `the transaction in signedTransactionInfo (format 3)`.
    init(_ payload: JSONValue, subject: String) throws(Rejection) {
        let reader = PayloadReader(object: payload, subject: subject)
        transactionId = try reader.requireKey("transactionId")
        originalTransactionId = try reader.string("originalTransactionId")
        productId = try reader.string("productId")
        appAccountToken = try reader.string("appAccountToken")
        bundleId = try reader.string("bundleId")
        environment = try reader.string("environment")
        signedDate = try reader.requireMilliseconds("signedDate")
        revocationDate = try reader.milliseconds("revocationDate")
    }

    /// The snapshot's place among others of the same transaction; a
    /// notification carrying it passes its own `signedDate` (ms) to order
    /// notifications about the same snapshot.
    func version(notificationSignedDate: Int64 = 0) -> ItemVersion {
        ItemVersion(primary: signedDate, revoked: revocationDate != nil, secondary: notificationSignedDate)
    }

    /// Copies the transaction's members into `fields`.
    func fill(_ fields: inout ItemFields) {
        fields.transactionId = transactionId.rawValue
        fields.originalTransactionId = originalTransactionId
        fields.productId = productId
        fields.appAccountToken = appAccountToken
        fields.bundleId = bundleId
        fields.environment = environment
        fields.signedDate = signedDate
        fields.revocationDate = revocationDate
    }
}

/// The members of a ResponseBodyV2DecodedPayload (App Store Server
/// Notifications V2) that txrecon reads.
/// https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload
struct NotificationPayload: Sendable {
    var notificationType: String
    var subtype: String?
    var notificationUUID: String
    /// When the App Store signed the notification, ms since 1970.
    var signedDate: Int64
    /// From `data` (or `summary` / `externalPurchaseToken` for the
    /// notification types that carry those instead).
    var bundleId: String?
    var environment: String?
    /// `data.signedTransactionInfo` and `data.signedRenewalInfo` verbatim, by
    /// name, in the order `data` lists them.
    var nestedSignedStrings: [(name: String, value: String)] = []

    /// The nested names that hold a compact JWS.
    static let nestedSignedNames = ["signedTransactionInfo", "signedRenewalInfo"]

    /// Reads `payload`; `subject` names it in messages, e.g.
    /// `the notification in signedPayload (format 2)`.
    init(_ payload: JSONValue, subject: String) throws(Rejection) {
        let reader = PayloadReader(object: payload, subject: subject)
        notificationType = try reader.requireString("notificationType")
        subtype = try reader.string("subtype")
        notificationUUID = try reader.requireString("notificationUUID")
        signedDate = try reader.requireMilliseconds("signedDate")
        for containerName in ["data", "summary", "externalPurchaseToken"] {
            guard let container = try reader.nestedObject(containerName) else { continue }
            let inner = PayloadReader(object: container, subject: "\(containerName) of \(subject)")
            bundleId = try inner.string("bundleId")
            environment = try inner.string("environment")
            // Only `data` carries signed strings; `summary` and `externalPurchaseToken` never do.
            for (name, value) in container.objectValue ?? []
            where containerName == "data" && NotificationPayload.nestedSignedNames.contains(name) {
                guard case let .string(text) = value else {
                    throw inner.invalid(name, value, expected: "a string (a compact JWS)")
                }
                nestedSignedStrings.append((name, text))
            }
            break
        }
    }
}
