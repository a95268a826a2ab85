// ContentDigest: what a signed payload says, apart from when it was signed,
// as one number: how `txrecon reconcile` and `import` tell a snapshot Apple
// signed afresh but unchanged from one that changed (README "How do I
// reconcile with Apple?").
//
// Apple signs every answer of its API anew, so the same transaction comes
// back with a new `signedDate` each time; nothing else in a transaction or
// a renewal info changes from one signing to the next. The digest is the
// first 8 bytes of the SHA-256 of the payload without its top-level
// `signedDate`, every object's members sorted by name (Apple's member order
// is not a promise), serialized compactly. 64 bits tell a change apart: the
// payloads are Apple's, not chosen to collide. Pure; one parse's worth of
// work, done where intake already holds the parsed payload.

package enum ContentDigest {
    /// The member left out: it changes on every signing.
    static let volatileMember = "signedDate"

    /// The digest of a decoded payload (a transaction's or a renewal info's).
    package static func of(_ payload: JSONValue) -> Int64 {
        var members = payload.objectValue ?? []
        members.removeAll { $0.0 == volatileMember }
        return SHA256Digest.bytes(canonical(.object(members)).serialized).prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// The digest of a payload's JSON text; nil when it is not JSON.
    package static func of(json: [UInt8]) -> Int64? {
        (try? JSONValue.parse(json)).map(of)
    }

    /// `value` with every object's members sorted by name.
    private static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            .object(members.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }.map { ($0.0, canonical($0.1)) })
        case .array(let elements):
            .array(elements.map(canonical))
        default:
            value
        }
    }
}
