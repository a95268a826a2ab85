// AppReceipt: what a StoreKit 1 app receipt says, read from its bytes
// without checking its signature (ReceiptVerifier does that, on the same
// payload).
//
// A receipt is a PKCS#7 SignedData (ContentInfo → SignedData →
// encapContentInfo → eContent) whose content is Apple's attribute set: a
// SET of SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }, the
// value holding a UTF8String, IA5String (dates) or INTEGER, and for type 17
// one in-app purchase, itself such a set. Types read here: 0 receipt type
// (Production, ProductionSandbox, Xcode), 2 bundle id, 3 app version, 12
// creation date, 19 original app version, 17 in-app purchases; in each
// purchase 1701 quantity, 1702 product id, 1703 transaction id, 1704
// purchase date, 1705 original transaction id, 1706 original purchase date,
// 1708 expires date, 1711 web order line item id, 1712 cancellation date,
// 1713 trial period, 1719 introductory offer period. Others are skipped.
// An empty date string means the date is absent (Apple's encoding).
// Pure; throws `DERError` naming the offset and what is wrong.

/// One in-app purchase entry of a receipt.
struct InAppPurchase: Sendable, Equatable {
    var quantity: Int64?
    var productId: String?
    var transactionId: String?
    var originalTransactionId: String?
    /// ms since 1970
    var purchaseDate: Int64?
    var originalPurchaseDate: Int64?
    var expiresDate: Int64?
    /// When Apple refunded or revoked it; nil while it stands.
    var cancellationDate: Int64?
    var webOrderLineItemId: Int64?
    var isTrialPeriod: Bool?
    var isInIntroOfferPeriod: Bool?
}

/// Who signed a receipt and how, as its one SignerInfo says, with the
/// certificates it carries: what ReceiptVerifier needs to check a receipt
/// from a signer it has verified before without parsing the certificates
/// again (which costs OpenSSL far more than the signature check).
struct ReceiptSignerInfo: Sendable, Equatable {
    /// The bytes of the SignedData's certificate set, tag and length included.
    var certificates: [UInt8]
    /// The SignerInfo's issuerAndSerialNumber, as encoded.
    var identifier: [UInt8]
    /// The contents of the digest and signature algorithms' OIDs.
    var digestAlgorithm: [UInt8]
    var signatureAlgorithm: [UInt8]
    var signature: [UInt8]
    /// Whether the SignerInfo has signed attributes, which change what the
    /// signature covers (no real receipt has any).
    var hasSignedAttributes: Bool
}

/// A decoded app receipt.
struct AppReceipt: Sendable, Equatable {
    /// The signed content, the attribute set: what the signature covers.
    var payload: [UInt8]
    /// The one signer of a DER receipt; nil for several signers or none,
    /// or a shape this reader does not take apart (the verifier then
    /// leaves it all to OpenSSL).
    var signer: ReceiptSignerInfo?
    /// Attribute 0: `Production`, `ProductionSandbox` or `Xcode`.
    var receiptType: String?
    var bundleId: String?
    var appVersion: String?
    var originalAppVersion: String?
    /// ms since 1970: when Apple (or Xcode) made and signed the receipt.
    var creationDate: Int64?
    var inAppPurchases: [InAppPurchase] = []

    /// More in-app purchases than this are refused: each becomes a drop of
    /// its own. Real receipts hold a few hundred; a customer's whole history
    /// of 5,000 must pass, and with Apple's entries of about 560 bytes of
    /// base64 each a receipt the default MaxFileSize= (8 MiB) takes holds
    /// about 14,900, under this bound.
    static let maximumPurchases = 16_384

    /// Reads the receipt in `der` (a PKCS#7 SignedData, DER or BER).
    init(der: [UInt8]) throws(DERError) {
        let reader = DERReader(der)
        let contentInfo = try reader.element(DERElement.sequence, at: 0, limit: der.count, what: "the receipt")
        guard contentInfo.end == der.count else {
            throw DERError(offset: contentInfo.end, problem: "\(der.count - contentInfo.end) bytes after the receipt")
        }
        var parts = try reader.children(of: contentInfo)
        guard parts.count == 2, parts[0].tag == DERElement.objectIdentifier,
              Array(der[parts[0].contents]) == AppReceipt.signedDataOID, parts[1].tag == DERElement.contextZero else {
            throw DERError(offset: contentInfo.contents.lowerBound, problem: "not a PKCS#7 SignedData")
        }
        let signedDataWrapper = try reader.children(of: parts[1], depth: 1)
        guard signedDataWrapper.count == 1, signedDataWrapper[0].tag == DERElement.sequence else {
            throw DERError(offset: parts[1].contents.lowerBound, problem: "not a PKCS#7 SignedData")
        }
        parts = try reader.children(of: signedDataWrapper[0], depth: 2)
        // version, digestAlgorithms, encapContentInfo, [certificates], [crls], signerInfos
        guard parts.count >= 4, parts[2].tag == DERElement.sequence else {
            throw DERError(offset: signedDataWrapper[0].contents.lowerBound, problem: "a SignedData without its content")
        }
        let encapsulated = try reader.children(of: parts[2], depth: 3)
        guard encapsulated.count == 2, encapsulated[0].tag == DERElement.objectIdentifier,
              Array(der[encapsulated[0].contents]) == AppReceipt.dataOID, encapsulated[1].tag == DERElement.contextZero else {
            throw DERError(offset: parts[2].contents.lowerBound, problem: "a SignedData whose content is not data")
        }
        let content = try reader.children(of: encapsulated[1], depth: 4)
        guard content.count == 1 else {
            throw DERError(offset: encapsulated[1].contents.lowerBound, problem: "not one content OCTET STRING")
        }
        payload = try reader.octets(of: content[0], depth: 5)
        signer = AppReceipt.signerInfo(reader, signedData: parts)
        try readAttributes()
    }

    /// The one SignerInfo, with the certificate set before it; nil when the
    /// receipt has no certificate set or not exactly one signer.
    private static func signerInfo(_ reader: DERReader, signedData parts: [DERElement]) -> ReceiptSignerInfo? {
        guard let certificates = parts.first(where: { $0.tag == DERElement.contextZero }),
              let signerInfos = parts.last, signerInfos.tag == DERElement.set,
              let signers = try? reader.children(of: signerInfos, depth: 3), signers.count == 1,
              let fields = try? reader.children(of: signers[0], depth: 4), fields.count >= 5,
              fields[1].tag == DERElement.sequence, fields[2].tag == DERElement.sequence else { return nil }
        let signedAttributes = fields[3].tag == DERElement.contextZero
        let rest = fields.dropFirst(signedAttributes ? 4 : 3)
        guard rest.count >= 2, let signatureAlgorithm = rest.first, signatureAlgorithm.tag == DERElement.sequence,
              rest[rest.startIndex + 1].tag == DERElement.octetString,
              let digest = try? reader.children(of: fields[2], depth: 5).first, digest.tag == DERElement.objectIdentifier,
              let algorithm = try? reader.children(of: signatureAlgorithm, depth: 5).first,
              algorithm.tag == DERElement.objectIdentifier else { return nil }
        return ReceiptSignerInfo(
            certificates: Array(reader.bytes[certificates.start..<certificates.end]),
            identifier: Array(reader.bytes[fields[1].contents]),
            digestAlgorithm: Array(reader.bytes[digest.contents]),
            signatureAlgorithm: Array(reader.bytes[algorithm.contents]),
            signature: Array(reader.bytes[rest[rest.startIndex + 1].contents]),
            hasSignedAttributes: signedAttributes)
    }


    /// 1.2.840.113549.1.7.2 and 1.2.840.113549.1.7.1, DER-encoded.
    static let signedDataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    static let dataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]

    private mutating func readAttributes() throws(DERError) {
        let reader = DERReader(payload)
        try AppReceipt.forEachAttribute(in: reader, at: 0, limit: payload.count) { type, value throws(DERError) in
            switch type {
            case 0: receiptType = try AppReceipt.string(reader, value)
            case 2: bundleId = try AppReceipt.string(reader, value)
            case 3: appVersion = try AppReceipt.string(reader, value)
            case 12: creationDate = try AppReceipt.date(reader, value)
            case 19: originalAppVersion = try AppReceipt.string(reader, value)
            case 17:
                guard inAppPurchases.count < AppReceipt.maximumPurchases else {
                    throw DERError(offset: value.lowerBound,
                                   problem: "more than \(AppReceipt.maximumPurchases) in-app purchases")
                }
                inAppPurchases.append(try AppReceipt.purchase(reader, value))
            default: break
            }
        }
    }

    private static func purchase(_ reader: DERReader, _ value: Range<Int>) throws(DERError) -> InAppPurchase {
        var purchase = InAppPurchase()
        try forEachAttribute(in: reader, at: value.lowerBound, limit: value.upperBound, depth: 3) { type, value throws(DERError) in
            switch type {
            case 1701: purchase.quantity = try integer(reader, value)
            case 1702: purchase.productId = try string(reader, value)
            case 1703: purchase.transactionId = try string(reader, value)
            case 1704: purchase.purchaseDate = try date(reader, value)
            case 1705: purchase.originalTransactionId = try string(reader, value)
            case 1706: purchase.originalPurchaseDate = try date(reader, value)
            case 1708: purchase.expiresDate = try date(reader, value)
            case 1711: purchase.webOrderLineItemId = try integer(reader, value)
            case 1712: purchase.cancellationDate = try date(reader, value)
            case 1713: purchase.isTrialPeriod = try integer(reader, value) != 0
            case 1719: purchase.isInIntroOfferPeriod = try integer(reader, value) != 0
            default: break
            }
        }
        return purchase
    }

    /// Calls `body` with each attribute's type and the range of its value's
    /// octets, for the attribute SET at `offset`, which must fill `limit`.
    private static func forEachAttribute(
        in reader: DERReader, at offset: Int, limit: Int, depth: Int = 0,
        _ body: (Int64, Range<Int>) throws(DERError) -> Void
    ) throws(DERError) {
        let set = try reader.element(DERElement.set, at: offset, limit: limit, depth: depth, what: "an attribute set")
        guard set.end == limit else {
            throw DERError(offset: set.end, problem: "\(limit - set.end) bytes after an attribute set")
        }
        for attribute in try reader.children(of: set, depth: depth) {
            guard attribute.tag == DERElement.sequence else {
                throw DERError(offset: attribute.contents.lowerBound, problem: "an attribute that is not a SEQUENCE")
            }
            let fields = try reader.children(of: attribute, depth: depth + 1)
            guard fields.count == 3, fields[2].tag == DERElement.octetString else {
                throw DERError(offset: attribute.contents.lowerBound,
                               problem: "an attribute that is not type, version and value")
            }
            let type = try reader.integer(of: fields[0])
            _ = try reader.integer(of: fields[1])
            try body(type, fields[2].contents)
        }
    }

    /// A value holding a UTF8String or IA5String.
    private static func string(_ reader: DERReader, _ value: Range<Int>) throws(DERError) -> String {
        let element = try reader.element(at: value.lowerBound, limit: value.upperBound, depth: 4)
        guard element.tag == DERElement.utf8String || element.tag == DERElement.ia5String, element.end == value.upperBound,
              let text = String(validating: reader.bytes[element.contents], as: UTF8.self) else {
            throw DERError(offset: value.lowerBound, problem: "a value that is not one UTF-8 string")
        }
        return text
    }

    /// A value holding an INTEGER.
    private static func integer(_ reader: DERReader, _ value: Range<Int>) throws(DERError) -> Int64 {
        let element = try reader.element(at: value.lowerBound, limit: value.upperBound, depth: 4)
        guard element.end == value.upperBound else {
            throw DERError(offset: element.end, problem: "bytes after an INTEGER value")
        }
        return try reader.integer(of: element)
    }

    /// A value holding a date string; the empty string is no date.
    private static func date(_ reader: DERReader, _ value: Range<Int>) throws(DERError) -> Int64? {
        let text = try string(reader, value)
        guard !text.isEmpty else { return nil }
        guard let milliseconds = ReceiptDate.milliseconds(text) else {
            throw DERError(offset: value.lowerBound, problem: "\(JSONValue.string(String(text.prefix(40))).serializedString) "
                           + "is not a date")
        }
        return milliseconds
    }
}

/// The dates of receipts: `2023-08-28T10:24:05Z`, and from Xcode
/// `2020-07-22T18:33:15+0100`; fractional seconds and `+01:00` are read too.
enum ReceiptDate {
    /// ms since 1970, or nil when `text` is not such a date.
    static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var position = 19
        var fraction: Int64 = 0
        if bytes[position] == UInt8(ascii: ".") {
            let start = position + 1
            position = start
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            guard position > start, let digits = number(start..<min(position, start + 3)) else { return nil }
            fraction = digits * [100, 10, 1][min(position, start + 3) - start - 1]
        }
        guard position < bytes.count else { return nil }
        var offsetMinutes: Int64 = 0
        switch bytes[position] {
        case UInt8(ascii: "Z"):
            guard position + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = bytes[position] == UInt8(ascii: "-") ? -1 : 1
            let rest = bytes.count - position - 1
            let colon = rest == 5 && bytes[position + 3] == UInt8(ascii: ":")
            guard rest == 4 || colon, let hours = number((position + 1)..<(position + 3)),
                  let minutes = number((position + (colon ? 4 : 3))..<bytes.count), hours < 24, minutes < 60 else { return nil }
            offsetMinutes = sign * (hours * 60 + minutes)
        default:
            return nil
        }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second - offsetMinutes * 60
        return seconds * 1000 + fraction
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date.
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
