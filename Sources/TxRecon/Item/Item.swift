// Item: one transaction snapshot (or notification, or envelope) as the
// delivery engine sees it, decoded from one spool file.
//
// An item is identified by its key and ordered by its version: for one key,
// only the newest snapshot is worth delivering (a refund supersedes the
// purchase, never the reverse). Nothing here touches the file system.
import Glibc

/// What an item is; sent to the backend as the body's `kind`.
package enum ItemKind: String, Sendable, Codable {
    case transaction = "appstore.transaction"
    case notification = "appstore.notification"
    /// One in-app purchase of a StoreKit 1 receipt.
    case receipt = "appstore.receipt"
    /// A StoreKit 1 receipt itself, delivered once, whose purchases (of
    /// kind `receipt`) name it by its SHA-256.
    case receiptFile = "appstore.receipt-file"
    case envelope
}

/// The identity of an item: the `transactionId` for anything carrying a
/// transaction, else the `notificationUUID`, else the envelope `id`.
/// At most one snapshot per key is pending at any time.
package struct ItemKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The key exactly as the producer gave it.
    package let rawValue: String

    /// Keys longer than this are refused at intake, so that a key always
    /// fits in a file name once encoded.
    package static let maximumLength = 128

    package init?(_ rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= ItemKey.maximumLength else { return nil }
        self.rawValue = rawValue
    }

    package var description: String { rawValue }

    // Keys are equal when their bytes are, as their file names, idempotency
    // keys and subjects are: String's == takes canonically equivalent text
    // for equal ("caf\u{E9}" and "cafe\u{301}"), which would have one key's
    // snapshot supersede another key's, never sent. So keys compare and hash
    // as bytes, which is also cheaper than String's Unicode-aware == and
    // hash: a key is looked up several times per delivery.
    package static func == (lhs: ItemKey, rhs: ItemKey) -> Bool {
        lhs.rawValue.withUTF8Bytes { left in rhs.rawValue.withUTF8Bytes { right in
            left.count == right.count && memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
        } }
    }

    package func hash(into hasher: inout Hasher) {
        rawValue.withUTF8Bytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// By the UTF-8 bytes, as SQLite's BINARY collation orders the
    /// ledger's keys (its writer sorts each batch this way): compared with
    /// memcmp, which the UTF8View's iterator took several times as long for.
    package static func < (lhs: ItemKey, rhs: ItemKey) -> Bool {
        let ordered = lhs.rawValue.utf8.withContiguousStorageIfAvailable { left in
            rhs.rawValue.utf8.withContiguousStorageIfAvailable { right -> Bool in
                let common = min(left.count, right.count)
                let order = common == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, common)
                return order != 0 ? order < 0 : left.count < right.count
            }
        }
        return (ordered ?? nil) ?? lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    /// The longest file name a key is given: `=` and the unpadded
    /// base64url of 128 bytes. Every name the spool derives from it fits in
    /// Linux's NAME_MAX (255 bytes), the longest being
    /// `KEY.superseded-VERSION.N` at 246 (tested).
    package static let maximumFileNameLength = 1 + (maximumLength * 4 + 2) / 3

    /// The key as a file name. Letters, digits, `-` and `_` stand as they
    /// are, every other byte as `%XX`, so that `ls queue/` stays readable;
    /// a key whose `%XX` form would be longer than `maximumFileNameLength`
    /// (up to 384 bytes: 128 dots, or 46 Cyrillic letters) is instead `=`
    /// followed by the base64url of its bytes. Either way the name never
    /// contains a `.`, so `NAME.state` and `NAME.reason` beside an item can
    /// never be an item, and each key has exactly one name.
    package var fileName: String {
        // Transaction ids are digits: most keys are their own file name, and
        // the string is shared instead of built again. The check runs on
        // the key's bytes in place (it runs several times per delivery);
        // remembering its answer in the key would make every stored key
        // (100,000 queued: three times over) a word longer.
        if rawValue.withUTF8Bytes({ $0.allSatisfy(ItemKey.isPlain) }) { return rawValue }
        let escapes = rawValue.utf8.count { !ItemKey.isPlain($0) }
        guard rawValue.utf8.count + 2 * escapes <= ItemKey.maximumFileNameLength else {
            return "=" + Base64URL.encode(rawValue.utf8)
        }
        var encoded: [UInt8] = []
        encoded.reserveCapacity(rawValue.utf8.count + 2 * escapes)
        for byte in rawValue.utf8 {
            if ItemKey.isPlain(byte) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(ItemKey.hexDigit(byte >> 4))
                encoded.append(ItemKey.hexDigit(byte & 0xF))
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// The key a file name encodes, or nil when the name is not the one
    /// `fileName` gives some key (a name of another spelling was not put
    /// there by txrecon).
    package init?(fileName: String) {
        let decoded: [UInt8]
        if fileName.utf8.first == UInt8(ascii: "=") {
            let encoded = Array(fileName.utf8.dropFirst())
            guard let bytes = try? encoded.withUnsafeBufferPointer({ buffer throws(Base64URLError) in
                try Base64URL.decode(buffer)
            }) else { return nil }
            decoded = bytes
        } else {
            guard let bytes = ItemKey.percentDecoded(fileName.utf8) else { return nil }
            decoded = bytes
        }
        guard let text = String(validating: decoded, as: UTF8.self) else { return nil }
        self.init(text)
        guard self.fileName == fileName else { return nil }
    }

    private static func percentDecoded(_ name: String.UTF8View) -> [UInt8]? {
        var decoded: [UInt8] = []
        var bytes = name.makeIterator()
        while let byte = bytes.next() {
            if ItemKey.isPlain(byte) {
                decoded.append(byte)
            } else if byte == UInt8(ascii: "%"), let high = bytes.next().flatMap(ItemKey.hexValue),
                      let low = bytes.next().flatMap(ItemKey.hexValue) {
                decoded.append(high << 4 | low)
            } else {
                return nil
            }
        }
        return decoded
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// The order of snapshots of one key. App Store items compare by the
/// transaction's `signedDate` (milliseconds), then by revocation (a snapshot
/// with a `revocationDate` is newer than one with the same `signedDate`
/// without), then by the enclosing notification's `signedDate`; a receipt's
/// purchase by its purchase or cancellation date, revocation, then its
/// `expiresDate` (ReceiptItems). Envelopes compare by their integer `version`.
package struct ItemVersion: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The transaction's `signedDate` in ms since 1970, or the envelope version.
    package var primary: Int64
    package var revoked: Bool
    /// The enclosing notification's `signedDate` in ms when `primary` is the
    /// transaction's; a receipt's purchase's `expiresDate` in ms; 0 otherwise.
    package var secondary: Int64

    package init(primary: Int64, revoked: Bool = false, secondary: Int64 = 0) {
        self.primary = primary
        self.revoked = revoked
        self.secondary = secondary
    }

    package static func < (lhs: ItemVersion, rhs: ItemVersion) -> Bool {
        if lhs.primary != rhs.primary { return lhs.primary < rhs.primary }
        if lhs.revoked != rhs.revoked { return !lhs.revoked }
        return lhs.secondary < rhs.secondary
    }

    /// A compact, unambiguous text form, used in `Idempotency-Key`, in file
    /// names of superseded snapshots and in logs: `1690000000000`,
    /// `1690000000000r`, `1690000000000r.1690000000123`.
    package var description: String {
        var text = String(primary)
        if revoked { text += "r" }
        if secondary != 0 { text += "." + String(secondary) }
        return text
    }
}

/// The decoded fields of an App Store transaction or notification that the
/// backend most likely wants without decoding the JWS itself. Names follow
/// Apple's JWSTransactionDecodedPayload and ResponseBodyV2DecodedPayload.
package struct ItemFields: Sendable, Equatable {
    package var transactionId: String?
    package var originalTransactionId: String?
    package var productId: String?
    package var appAccountToken: String?
    package var bundleId: String?
    package var environment: String?
    /// ms since 1970
    package var signedDate: Int64?
    /// ms since 1970
    package var revocationDate: Int64?
    package var notificationType: String?
    package var subtype: String?
    package var notificationUUID: String?
    /// Apple's one id per Apple Account that downloaded the app (a
    /// transaction's `appTransactionId`).
    package var appTransactionId: String?
    // A receipt's in-app purchase (ms since 1970 for the dates).
    package var purchaseDate: Int64?
    package var originalPurchaseDate: Int64?
    package var expiresDate: Int64?
    package var quantity: Int64?
    package var webOrderLineItemId: String?
    package var isTrialPeriod: Bool?
    package var isInIntroOfferPeriod: Bool?
    /// The SHA-256 (lowercase hex) of the receipt a receipt's purchase
    /// comes from, and of the receipt item's own bytes: how a backend
    /// matches the two (ReceiptStore names the stored receipt so).
    package var receiptSha256: String?
    /// `ContentDigest` of the transaction's payload and of the renewal
    /// info's: what reconciliation with Apple compares, kept in the ledger.
    package var transactionDigest: Int64?
    package var renewalDigest: Int64?

    package init() {}
}

/// One snapshot ready for delivery: what intake decoded from one file.
package struct Item: Sendable, Equatable {
    package var key: ItemKey
    package var version: ItemVersion
    package var kind: ItemKind
    /// Everything else, behind one reference: an item is copied several
    /// times between intake and the end of its attempt (into a drop, the
    /// pending entry, the attempt, its result), and copying a dozen strings
    /// each time was a few percent of a drain's instructions
    /// (bench/FINDINGS.md). Set once; a change makes a new one.
    private var content: Content

    package var fields: ItemFields {
        get { content.fields }
        set { content = content.with { $0.fields = newValue } }
    }
    /// Every original signed string, verbatim, by its Apple name
    /// (`signedTransactionInfo`, `signedRenewalInfo`, `signedPayload`), in
    /// the order they appeared.
    package var signedStrings: [(name: String, value: String)] {
        get { content.signedStrings }
        set { content = content.with { $0.signedStrings = newValue } }
    }
    /// The payload of each signed string as Apple signed it (the JWS's
    /// second segment decoded: JSON, byte for byte), under the body's name
    /// for it (`SignedDataKind.decodedName`), in the order of
    /// `signedStrings`. Intake decoded it anyway; the body carries it so
    /// that a backend never decodes a JWS. Empty for envelopes and receipts.
    package var decodedPayloads: [(name: String, json: [UInt8])] {
        get { content.decodedPayloads }
        set { content = content.with { $0.decodedPayloads = newValue } }
    }
    /// The envelope's `payload` as given; nil for App Store items.
    package var payload: JSONValue? {
        get { content.payload ?? content.payloadText.flatMap { try? JSONValue.parse($0) } }
        set { content = content.with { $0.payload = newValue; $0.payloadText = nil } }
    }
    /// The envelope's `payload` exactly as the file holds it, when the item
    /// was read from one (then the item keeps only these bytes, and
    /// `payload` parses them when asked): the body carries them rather than
    /// the payload written out again, which was a few percent of a drain's
    /// instructions, and the payload reaches the backend byte for byte as
    /// given. nil for App Store items and items made in code.
    var payloadText: [UInt8]? { content.payloadText }
    /// What the app uploaded beside the signed data (an order id,
    /// `applicationUsername`), which Apple did not sign: an object of the
    /// upload's other members, in their order, delivered as `unverified`
    /// and never used for the key, the version or any decision. nil when
    /// there is none.
    package var context: JSONValue? {
        get { content.context }
        set { content = content.with { $0.context = newValue } }
    }

    package init(key: ItemKey, version: ItemVersion, kind: ItemKind, fields: ItemFields = ItemFields(),
                signedStrings: [(name: String, value: String)] = [],
                decodedPayloads: [(name: String, json: [UInt8])] = [], payload: JSONValue? = nil,
                context: JSONValue? = nil) {
        self.init(key: key, version: version, kind: kind, fields: fields, signedStrings: signedStrings,
                  decodedPayloads: decodedPayloads, payload: payload, payloadText: nil, context: context)
    }

    /// An envelope read from a file: `payloadText` is its payload's bytes as
    /// the file holds them (valid JSON, which the caller has checked).
    init(key: ItemKey, version: ItemVersion, payloadText: [UInt8]) {
        self.init(key: key, version: version, kind: .envelope, payload: nil, payloadText: payloadText)
    }

    private init(key: ItemKey, version: ItemVersion, kind: ItemKind, fields: ItemFields = ItemFields(),
                 signedStrings: [(name: String, value: String)] = [],
                 decodedPayloads: [(name: String, json: [UInt8])] = [], payload: JSONValue?, payloadText: [UInt8]?,
                 context: JSONValue? = nil) {
        self.key = key
        self.version = version
        self.kind = kind
        content = Content(fields: fields, signedStrings: signedStrings, decodedPayloads: decodedPayloads,
                          payload: payload, payloadText: payloadText, context: context)
    }

    package static func == (lhs: Item, rhs: Item) -> Bool {
        lhs.key == rhs.key && lhs.version == rhs.version && lhs.kind == rhs.kind && lhs.fields == rhs.fields
            && lhs.payload == rhs.payload && lhs.context == rhs.context
            && lhs.signedStrings.map(\.name) == rhs.signedStrings.map(\.name)
            && lhs.signedStrings.map(\.value) == rhs.signedStrings.map(\.value)
            && lhs.decodedPayloads.map(\.name) == rhs.decodedPayloads.map(\.name)
            && lhs.decodedPayloads.map(\.json) == rhs.decodedPayloads.map(\.json)
    }

    /// Immutable, so shared between copies of an item and between threads.
    private final class Content: Sendable {
        let fields: ItemFields
        let signedStrings: [(name: String, value: String)]
        let decodedPayloads: [(name: String, json: [UInt8])]
        let payload: JSONValue?
        let payloadText: [UInt8]?
        let context: JSONValue?

        init(fields: ItemFields, signedStrings: [(name: String, value: String)],
             decodedPayloads: [(name: String, json: [UInt8])], payload: JSONValue?,
             payloadText: [UInt8]?, context: JSONValue?) {
            self.fields = fields
            self.signedStrings = signedStrings
            self.decodedPayloads = decodedPayloads
            self.payload = payload
            self.payloadText = payloadText
            self.context = context
        }

        /// A copy with `change` made to it.
        func with(_ change: (inout Changes) -> Void) -> Content {
            var changes = Changes(fields: fields, signedStrings: signedStrings, decodedPayloads: decodedPayloads,
                                  payload: payload, payloadText: payloadText, context: context)
            change(&changes)
            return Content(fields: changes.fields, signedStrings: changes.signedStrings,
                           decodedPayloads: changes.decodedPayloads, payload: changes.payload,
                           payloadText: changes.payloadText, context: changes.context)
        }

        struct Changes {
            var fields: ItemFields
            var signedStrings: [(name: String, value: String)]
            var decodedPayloads: [(name: String, json: [UInt8])]
            var payload: JSONValue?
            var payloadText: [UInt8]?
            var context: JSONValue?
        }
    }
}
