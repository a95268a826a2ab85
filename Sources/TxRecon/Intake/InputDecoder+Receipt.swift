// InputDecoder+Receipt: format 6, a StoreKit 1 receipt upload:
// `{"receipt": "<base64 PKCS#7>", …}`, the app's context in its other
// members, or the bare base64 of a receipt; and the parts intake splits
// such an upload into, `{"receiptSha256": "<hex>", …}` (ReceiptSplit).
//
// A receipt holds the app's whole purchase history; each in-app purchase is
// one item, keyed by its transaction id like a StoreKit 2 transaction, so
// that a receipt entry, a signed transaction and a notification about the
// same purchase supersede each other by version, and the receipt itself is
// one more item (ReceiptItems). An upload is taken apart here whatever its
// number of purchases (`.receipt`): intake stores the receipt once and
// writes a small part per item. A part is only read here (`.receiptPart`):
// what it names is in receipts/, which ReceiptLibrary reads. An upload with
// `txreconReceiptEntry` naming a purchase is a part as releases before
// receipts/ wrote them: still that one purchase, carrying its receipt.
// Signatures are the verifier's; touches no files.

extension InputDecoder {
    /// The member a part adds to name its purchase.
    static let receiptEntryMember = "txreconReceiptEntry"
    /// The member a part names its stored receipt by.
    static let receiptNameMember = "receiptSha256"

    /// `{"receipt": "<base64>", …}`.
    func decodeReceiptUpload(_ value: JSONValue, parsed: inout ParsedSignedStrings) throws(Rejection) -> DecodedInput {
        let format = "a receipt upload (format 6)"
        let reader = PayloadReader(object: value, subject: format)
        if value[InputDecoder.receiptNameMember] != nil {
            throw Rejection(.unexpectedMember, "\(format) carries both receipt and \(InputDecoder.receiptNameMember), "
                + "which names a receipt txrecon stored; send the receipt alone")
        }
        let text = try reader.requireString("receipt")
        guard let der = Base64.decode(text.utf8), der.first == DERElement.sequence else {
            throw Rejection(.malformedReceipt, "receipt of \(format) is not the standard base64 of a receipt; send "
                + "the app receipt's bytes as Data.base64EncodedString() gives them")
        }
        return try decodeReceipt(der: der, text: text, upload: value, parsed: &parsed)
    }

    /// The receipt `der` (base64 `text` as uploaded), from `upload` (nil
    /// for a bare base64 file), taken apart: checked whole, so that a
    /// receipt with one bad purchase is refused before anything is written.
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
        var purchases: [Item] = []
        purchases.reserveCapacity(receipt.inAppPurchases.count)
        for (index, purchase) in receipt.inAppPurchases.enumerated() {
            purchases.append(try ReceiptItems.purchase(purchase, index: index, of: receipt, receiptSha256: nil,
                                                       context: context))
        }
        if let selected {
            guard let item = purchases.first(where: { $0.key.rawValue.utf8.elementsEqual(selected.utf8) }) else {
                // Quoted only when it could be a transaction id: the value is
                // the producer's, and the reason goes to the journal and
                // rejected/NAME.reason.
                let named = selected.utf8.count <= ItemKey.maximumLength
                    ? "transaction " + JSONValue.string(selected).serializedString
                    : "a value of \(selected.utf8.count) bytes, longer than any transaction id,"
                throw Rejection(.invalidField, "\(InputDecoder.receiptEntryMember) of \(format) names \(named) which "
                    + "the receipt does not hold")
            }
            // A part an earlier release wrote: the receipt travels with it,
            // as the standard base64 of its bytes, whatever spelling came
            // (unpadded, with line breaks: Base64 takes both), as the
            // receipt item carries it: a backend's decoder may refuse the other.
            var legacy = item
            legacy.signedStrings = [("receipt", Base64.encode(der))]
            return .item(legacy)
        }
        return .receipt(ReceiptSplit(der: der, receipt: receipt, context: context, purchases: purchases))
    }

    /// `{"receiptSha256": "<hex>", "txreconReceiptEntry": "<id>"?, …}`: a
    /// part of a receipt upload. Its other members are the upload's context.
    func decodeReceiptPart(_ value: JSONValue) throws(Rejection) -> DecodedInput {
        let format = "a receipt part (format 6, as intake splits an upload)"
        let reader = PayloadReader(object: value, subject: format)
        let name = try reader.requireString(InputDecoder.receiptNameMember)
        guard ReceiptPart.isReceiptName(name) else {
            throw reader.invalid(InputDecoder.receiptNameMember, .string(name),
                                 expected: "the SHA-256 of a receipt in 64 lowercase hex digits")
        }
        let entry = try reader.string(InputDecoder.receiptEntryMember)
        if let entry, ItemKey(entry) == nil {
            throw reader.invalid(InputDecoder.receiptEntryMember, .string(entry),
                                 expected: "a transaction id of 1 to \(ItemKey.maximumLength) bytes")
        }
        let context = try InputDecoder.context(of: value, besides: [InputDecoder.receiptNameMember,
                                                                    InputDecoder.receiptEntryMember], format: format)
        return .receiptPart(ReceiptPart(receiptSha256: name, entry: entry, context: context))
    }
}
