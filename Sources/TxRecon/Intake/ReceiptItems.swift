// ReceiptItems: the items a StoreKit 1 receipt becomes, made here and
// nowhere else: whether the decoder takes an upload apart or intake and the
// engine read a part back through ReceiptLibrary, one receipt always gives
// the same keys, versions and fields.
//
//   a purchase   key: its transaction id; kind appstore.receipt; version:
//                its purchase date, or once Apple revoked it its
//                cancellation date, marked revoked, then its expiresDate
//                (a subscription's; none: 0); the entry's fields,
//                bundleId, environment and receiptSha256
//   the receipt  key: receipt-HEX (HEX its SHA-256); kind
//                appstore.receipt-file; version: its creation date;
//                bundleId, environment, receiptSha256 and the receipt
//                itself (`receipt`, standard base64 of its bytes)
//
// Both carry the upload's context as `unverified`. Pure; throws a
// `Rejection` for a purchase that cannot be an item.

enum ReceiptItems {
    /// What the receipt item's key starts with; a transaction id never
    /// does (they are digits), so the two never share a key.
    static let keyPrefix = "receipt-"

    /// The key of the item of the receipt named `receiptSha256`: 72 bytes.
    static func key(ofReceipt receiptSha256: String) -> ItemKey {
        guard let key = ItemKey(keyPrefix + receiptSha256) else {
            preconditionFailure("receipt name \(receiptSha256) makes no item key")
        }
        return key
    }

    /// One purchase (`index` from 0 in the receipt) as an item. Its version
    /// comes from the entry (`version(of:purchaseDate:)`), not from the
    /// receipt's creation date, which changes at every upload: the same
    /// entry in the next upload has the same version. `receiptSha256` is nil
    /// only for a part an earlier release wrote, which carries the receipt
    /// itself.
    static func purchase(_ purchase: InAppPurchase, index: Int, of receipt: AppReceipt, receiptSha256: String?,
                         context: JSONValue?) throws(Rejection) -> Item {
        let subject = "in-app purchase \(index + 1) of the receipt (format 6)"
        guard let transactionId = purchase.transactionId else {
            throw Rejection(.missingField, "\(subject) has no transaction id (attribute 1703)")
        }
        guard let key = ItemKey(transactionId) else {
            throw Rejection(.invalidField, "\(subject) has a transaction id of \(transactionId.utf8.count) bytes; "
                + "an item key has 1 to \(ItemKey.maximumLength) bytes")
        }
        guard let purchaseDate = purchase.purchaseDate else {
            throw Rejection(.missingField, "\(subject) has no purchase date (attribute 1704)")
        }
        var fields = ItemFields()
        fields.transactionId = transactionId
        fields.originalTransactionId = purchase.originalTransactionId
        fields.productId = purchase.productId
        fields.bundleId = receipt.bundleId
        fields.environment = receipt.environment
        fields.purchaseDate = purchaseDate
        fields.originalPurchaseDate = purchase.originalPurchaseDate
        fields.expiresDate = purchase.expiresDate
        fields.revocationDate = purchase.cancellationDate
        fields.quantity = purchase.quantity
        fields.webOrderLineItemId = purchase.webOrderLineItemId.map(String.init)
        fields.isTrialPeriod = purchase.isTrialPeriod
        fields.isInIntroOfferPeriod = purchase.isInIntroOfferPeriod
        fields.receiptSha256 = receiptSha256
        return Item(key: key, version: version(of: purchase, purchaseDate: purchaseDate), kind: .receipt,
                    fields: fields, context: context)
    }

    /// The version of a purchase bought at `purchaseDate`: the entry's own
    /// dates, the same in every upload that holds the entry unchanged (an
    /// app uploads its whole receipt after every purchase, and its history
    /// must not go out again each time). A cancellation date replaces the
    /// purchase date, marked revoked: a refund is newer than the purchase.
    /// The expiry comes last (`secondary`): a renewal date Apple extended
    /// (the App Store Server API's "Extend a Subscription Renewal Date": the
    /// same transaction with a later `expires_date`) is newer, and an older
    /// receipt still holding the earlier expiry is older than the extension.
    /// What the dates cannot carry (a refund Apple reversed, its
    /// cancellation date gone; an expiry moved earlier) reads as older and
    /// is not delivered; StoreKit 2's transactions, the notifications and
    /// `txrecon reconcile` carry those. A function of the entry alone, not
    /// of what a destination confirmed: one part has one version for the
    /// split, for every destination, and whenever an engine reads it back
    /// from queue/ or done/. What an earlier release recorded without the
    /// expiry is read by `confirmedVersion(recorded:kind:expiresDate:)`.
    static func version(of purchase: InAppPurchase, purchaseDate: Int64) -> ItemVersion {
        ItemVersion(primary: purchase.cancellationDate ?? purchaseDate, revoked: purchase.cancellationDate != nil,
                    secondary: purchase.expiresDate ?? 0)
    }

    /// The version a destination's confirmation of `kind`, recorded as
    /// `recorded` with the expiry `expiresDate`, stands for now. A release
    /// before the expiry entered a purchase's version recorded a
    /// subscription's confirmation without it (`secondary` 0): read as
    /// today's version of the entry it confirmed, so that after an upgrade
    /// the same entry uploaded again is the version confirmed (not newer:
    /// every subscription purchase would otherwise go out once more, under
    /// a new Idempotency-Key), while a later expiry is newer. The row keeps
    /// the version as sent: its Idempotency-Key (LedgerRecord) is derived
    /// from it. Any other confirmation is its version as recorded.
    static func confirmedVersion(recorded: ItemVersion, kind: ItemKind, expiresDate: Int64?) -> ItemVersion {
        guard kind == .receipt, recorded.secondary == 0, let expiresDate else { return recorded }
        var version = recorded
        version.secondary = expiresDate
        return version
    }

    /// The receipt `der` (read as `receipt`, named `receiptSha256`) as an
    /// item of its own, delivered once: the one body that carries it. Its
    /// creation date is its version (a receipt without one, taken only
    /// with Mode=none, has version 0): one name is one content, so one
    /// version.
    static func receipt(_ receipt: AppReceipt, der: [UInt8], receiptSha256: String, context: JSONValue?) -> Item {
        var fields = ItemFields()
        fields.bundleId = receipt.bundleId
        fields.environment = receipt.environment
        fields.receiptSha256 = receiptSha256
        return Item(key: key(ofReceipt: receiptSha256), version: ItemVersion(primary: receipt.creationDate ?? 0),
                    kind: .receiptFile, fields: fields, signedStrings: [("receipt", Base64.encode(der))],
                    context: context)
    }
}

extension AppReceipt {
    /// The receipt type as Apple's payloads spell `environment`:
    /// `ProductionSandbox` is `Sandbox`; a Volume Purchase Program receipt
    /// (`ProductionVPP`, `ProductionVPPSandbox`) is of the environment it
    /// names. Any other type is given as it is, so that its refusal
    /// (`wrong-environment`) quotes it rather than "no environment".
    var environment: String? {
        switch receiptType {
        case "Production", "ProductionVPP": "Production"
        case "ProductionSandbox", "ProductionVPPSandbox": "Sandbox"
        case "Xcode": "Xcode"
        default: receiptType
        }
    }
}
