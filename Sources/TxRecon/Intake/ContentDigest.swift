// ContentDigest: what a signed payload says, apart from when it was signed,
// as one number: how `txrecon reconcile` and `import` tell a snapshot Apple
// signed afresh but unchanged from one that changed
// (docs/reconcile.md "How do I reconcile with Apple?").
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
        var canonical: [UInt8] = []
        canonical.reserveCapacity(1024)
        write(payload, to: &canonical, leavingOut: volatileMember)
        return SHA256Digest.bytes(canonical).prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// The digest of a payload's JSON text; nil when it is not JSON.
    package static func of(json: [UInt8]) -> Int64? {
        (try? JSONValue.parse(json)).map(of)
    }

    /// Writes `value` compactly with every object's members sorted by name
    /// (for the ASCII names Apple uses, byte order), an object's member
    /// `leftOut` omitted: into one buffer, the digest's hot path at intake
    /// (a copy of the value sorted, then serialized, cost twice as much).
    private static func write(_ value: JSONValue, to output: inout [UInt8], leavingOut leftOut: String? = nil) {
        switch value {
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            var first = true
            for index in members.indices.sorted(by: { members[$0].0 < members[$1].0 }) where members[index].0 != leftOut {
                JSONValue.writeMemberName(members[index].0, first: first, to: &output)
                write(members[index].1, to: &output)
                first = false
            }
            output.append(UInt8(ascii: "}"))
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        default:
            value.write(to: &output)
        }
    }
}
