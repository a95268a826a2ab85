// ParsedSignedStrings: the compact JWS the decoder parsed for one item, so
// that the verifier checks those parses instead of parsing every JWS again.
//
// A parse is several kilobytes (the header's three certificates, the signing
// input), so it lives only from decode to verify and never in the `Item`
// that waits for delivery. Each parse is recorded under the name the item
// gives its signed string and with the exact text it came from; a look-up
// with any other text finds nothing, and the verifier then parses that text
// itself.

/// The JWS parsed while decoding one item, by signed-string name.
struct ParsedSignedStrings {
    /// Usually at most three: a notification's signedPayload and its two
    /// nested JWS.
    private var parses: [(name: String, text: String, jws: CompactJWS)] = []

    /// What the decoded notification holds that this release does not
    /// know (NotificationPayload.novelties), for intake to report once
    /// the item verified.
    var novelties: [AppleNovelty] = []

    /// Headers whose parses the decoder may reuse (the verifier's).
    let knownHeaders: KnownJOSEHeaders?

    init(knownHeaders: KnownJOSEHeaders? = nil) {
        self.knownHeaders = knownHeaders
    }

    /// The receipt of a receipt upload (format 6): its base64 text as
    /// uploaded, its bytes and what they say.
    private(set) var receipt: ParsedReceipt?

    mutating func record(_ jws: CompactJWS, name: String, text: String) {
        parses.append((name, text, jws))
    }

    mutating func recordReceipt(_ receipt: AppReceipt, der: [UInt8], text: String) {
        self.receipt = ParsedReceipt(text: text, der: der, receipt: receipt)
    }

    /// The parse of `text` recorded under `name`, if `text` is what was parsed.
    func jws(named name: String, text: String) -> CompactJWS? {
        parses.first { $0.name == name && $0.text == text }?.jws
    }
}

/// A receipt as the decoder read it, for the verifier.
struct ParsedReceipt {
    /// The base64 text as uploaded: the item's `receipt` signed string.
    var text: String
    var der: [UInt8]
    var receipt: AppReceipt
}
