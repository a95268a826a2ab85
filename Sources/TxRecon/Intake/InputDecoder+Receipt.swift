// InputDecoder+Receipt: format 6, a StoreKit 1 receipt upload:
// `{"receipt": "<base64 PKCS#7>", …}`, the app's context in its other
// members, or the bare base64 of a receipt.
//
// A receipt holds the app's whole purchase history; each in-app purchase is
// one item, keyed by its transaction id like a StoreKit 2 transaction, so
// that a receipt entry, a signed transaction and a notification about the
// same purchase supersede each other by version. An upload with one
// purchase is that item; one with several is split into one part per
// purchase (the upload with `txreconReceiptEntry` naming the purchase's
// transaction id, ReceiptSplit), each taken like any other drop, and the
// entries already delivered are then superseded as usual. Signatures are
// the verifier's.

extension InputDecoder {
    /// The member a split part adds to name its purchase.
    static let receiptEntryMember = "txreconReceiptEntry"

    /// `{"receipt": "<base64>", …}`.
    func decodeReceiptUpload(_ value: JSONValue, parsed: inout ParsedSignedStrings) throws(Rejection) -> DecodedInput {
        let format = "a receipt upload (format 6)"
        let reader = PayloadReader(object: value, subject: format)
        let text = try reader.requireString("receipt")
        guard let der = Base64.decode(text.utf8), der.first == DERElement.sequence else {
            throw Rejection(.malformedReceipt, "receipt of \(format) is not the standard base64 of a receipt; send "
                + "the app receipt's bytes as Data.base64EncodedString() gives them")
        }
        return try decodeReceipt(der: der, text: text, upload: value, parsed: &parsed)
    }

    /// The items of the receipt `der` (base64 `text` as uploaded), from
    /// `upload` (nil for a bare base64 file).
    func decodeReceipt(der: [UInt8], text: String, upload: JSONValue?,
                       parsed: inout ParsedSignedStrings) throws(Rejection) -> DecodedInput {
        let receipt: AppReceipt
        do {
            receipt = try AppReceipt(der: der)
        } catch {
            throw Rejection(.malformedReceipt, "the receipt (format 6) is not a StoreKit 1 app receipt: \(error)")
        }
        parsed.recordReceipt(receipt, der: der, text: text)
        let format = "a receipt upload (format 6)"
        let selected = try upload.map { upload throws(Rejection) in
            try PayloadReader(object: upload, subject: format).string(InputDecoder.receiptEntryMember)
        } ?? nil
        let context = try upload.map { upload throws(Rejection) in
            try InputDecoder.context(of: upload, besides: ["receipt", InputDecoder.receiptEntryMember], format: format)
        } ?? nil
        guard !receipt.inAppPurchases.isEmpty else {
            throw Rejection(.emptyReceipt, "the receipt (format 6) holds no in-app purchase, so there is nothing to "
                + "deliver (a consumable leaves the receipt once the app has finished its transaction)")
        }
        var items: [Item] = []
        for (index, purchase) in receipt.inAppPurchases.enumerated() {
            items.append(try InputDecoder.item(purchase, index: index, of: receipt, text: text, context: context))
        }
        if let selected {
            guard let item = items.first(where: { $0.key.rawValue.utf8.elementsEqual(selected.utf8) }) else {
                throw Rejection(.invalidField, "\(InputDecoder.receiptEntryMember) of \(format) names transaction "
                    + "\(JSONValue.string(selected).serializedString), which the receipt does not hold")
            }
            return .item(item)
        }
        guard items.count > 1 else { return .item(items[0]) }
        return .receipt(ReceiptSplit(members: upload?.objectValue ?? [("receipt", .string(text))],
                                     transactionIds: items.map(\.key.rawValue)))
    }

    /// One purchase as an item. Its version comes from the entry, not from
    /// the receipt's creation date, which changes at every upload: the
    /// purchase date, or once Apple revoked it the cancellation date, marked
    /// revoked; the same entry in the next upload has the same version.
    private static func item(_ purchase: InAppPurchase, index: Int, of receipt: AppReceipt, text: String,
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
        let version = ItemVersion(primary: purchase.cancellationDate ?? purchaseDate,
                                  revoked: purchase.cancellationDate != nil)
        return Item(key: key, version: version, kind: .receipt, fields: fields,
                    signedStrings: [("receipt", text)], context: context)
    }
}

extension AppReceipt {
    /// The receipt type as Apple's payloads spell `environment`:
    /// `ProductionSandbox` is `Sandbox`; nil for anything else.
    var environment: String? {
        switch receiptType {
        case "Production": "Production"
        case "ProductionSandbox": "Sandbox"
        case "Xcode": "Xcode"
        default: nil
        }
    }
}
