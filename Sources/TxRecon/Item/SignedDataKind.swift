// SignedDataKind: the kinds of App Store signed strings, by the name Apple
// gives them, and the name the delivery body gives each one's decoded
// payload. Decided here and nowhere else: the decoder names what it found,
// the verifier picks its checks by kind, the body writes the names.
//
// Apple adds signed members without notice (`signedAppTransactionInfo`
// arrived with RESCIND_CONSENT in 2025): any member named `signed…` that
// holds a compact JWS is one, of kind `unknown` until txrecon learns it, and
// is verified and delivered all the same. Reports nothing.

enum SignedDataKind: Sendable, Equatable {
    /// `signedTransactionInfo`: a JWSTransactionDecodedPayload.
    case transaction
    /// `signedRenewalInfo`: a JWSRenewalInfoDecodedPayload.
    case renewalInfo
    /// `signedPayload`: a ResponseBodyV2DecodedPayload (a notification).
    case notification
    /// `signedAppTransactionInfo`: an AppTransaction, the customer's
    /// purchase of the app itself.
    case appTransaction
    /// Another `signed…` member: one Apple added after this release.
    case unknown

    /// The kind of the signed string named `name` in an `Item`; nil for a
    /// name that is not a JWS's (a receipt's `receipt`).
    /// A second member of one name in a notification is named with its
    /// container (`container.signedTransactionInfo`): its kind is the
    /// member's.
    init?(signedStringName qualified: String) {
        let name = qualified.lastIndex(of: ".").map { String(qualified[qualified.index(after: $0)...]) } ?? qualified
        switch name {
        case "signedTransactionInfo": self = .transaction
        case "signedRenewalInfo": self = .renewalInfo
        case "signedPayload": self = .notification
        case "signedAppTransactionInfo": self = .appTransaction
        default:
            guard SignedDataKind.isSignedMemberName(name) else { return nil }
            self = .unknown
        }
    }

    /// Whether `name` is spelled as Apple names its signed members:
    /// `signed` and a capital letter (so `signedDate`, a number, qualifies
    /// by name; the caller also asks for a JWS in the value).
    static func isSignedMemberName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard bytes.count > 6, bytes.starts(with: "signed".utf8) else { return false }
        let next = bytes[bytes.index(bytes.startIndex, offsetBy: 6)]
        return next >= UInt8(ascii: "A") && next <= UInt8(ascii: "Z")
    }

    /// The body's name for the decoded payload of the signed string named
    /// `name`: Apple's model names for the kinds txrecon knows
    /// (`transaction`, `renewalInfo`, `notification`, `appTransaction`);
    /// for another, `decoded` and the member's name without `signed`
    /// (`signedFooInfo` → `decodedFooInfo`), which no other body member can
    /// be called.
    /// A member named with its container (`container.signedFooInfo`) is
    /// decoded under its container's name too (`container.decodedFooInfo`).
    static func decodedName(ofSignedString name: String) -> String {
        if let dot = name.lastIndex(of: ".") {
            return String(name[...dot]) + decodedName(ofSignedString: String(name[name.index(after: dot)...]))
        }
        return switch SignedDataKind(signedStringName: name) {
        case .transaction: "transaction"
        case .renewalInfo: "renewalInfo"
        case .notification: "notification"
        case .appTransaction: "appTransaction"
        case .unknown, nil: "decoded" + name.dropFirst("signed".count)
        }
    }
}
