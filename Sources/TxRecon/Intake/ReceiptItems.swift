// ReceiptItems: the items a StoreKit 1 receipt becomes, made here and
// nowhere else: whether the decoder takes an upload apart or intake and the
// engine read a part back through ReceiptLibrary, one receipt always gives
// the same keys, versions and fields.
//
//   a purchase   key: its transaction id; kind appstore.receipt; version:
//                its purchase date, or once Apple revoked it its
//                cancellation date, marked revoked; the entry's fields,
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
    /// comes from the entry, not from the receipt's creation date, which
    /// changes at every upload: the same entry in the next upload has the
    /// same version. `receiptSha256` is nil only for a part an earlier
    /// release wrote, which carries the receipt itself.
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
        let version = ItemVersion(primary: purchase.cancellationDate ?? purchaseDate,
                                  revoked: purchase.cancellationDate != nil)
        return Item(key: key, version: version, kind: .receipt, fields: fields, context: context)
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
