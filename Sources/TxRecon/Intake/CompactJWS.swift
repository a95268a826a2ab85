// CompactJWS: the structure of one compact JWS (RFC 7515 §7.1), as Apple
// signs every transaction, renewal info and notification.
//
// Only structure is checked here, strictly (exactly three non-empty
// canonical base64url segments, no padding, whitespace or standard-alphabet
// characters; header and payload JSON objects without duplicate keys, each
// bounded in size), so that the signature verifier can rely on one parse and
// never sees a second spelling of the same bytes. No signature, algorithm or
// certificate is looked at. Failures are thrown as `JWSError`; nothing is logged.
import Glibc

/// One parsed compact JWS: `BASE64URL(header).BASE64URL(payload).BASE64URL(signature)`.
struct CompactJWS: Sendable {
    /// The decoded JOSE header, e.g. `{"alg":"ES256","x5c":[…]}`.
    let header: JSONValue
    /// The decoded payload; always a JSON object.
    let payload: JSONValue
    /// The payload's JSON exactly as Apple signed it (the second segment,
    /// base64url-decoded): what the delivery body carries decoded, byte
    /// for byte, with no second parse or serialization.
    let payloadJSON: [UInt8]
    /// The ASCII bytes `header.payload` exactly as received: what the
    /// signature covers.
    let signingInput: [UInt8]
    /// The decoded third segment; for ES256 the JOSE raw `r‖s` (64 bytes).
    let signature: [UInt8]
    /// The length of the encoded header: `signingInput[..<encodedHeaderCount]`
    /// is the header exactly as received.
    let encodedHeaderCount: Int

    /// The largest accepted decoded header, in bytes (16 KiB). Apple's
    /// headers, three certificates in `x5c`, take about 4 KiB.
    static let maximumHeaderSize = 16 * 1024
    /// The largest accepted decoded payload, in bytes (64 KiB). Apple's
    /// largest payloads, notifications with two nested JWS, take about 14 KiB.
    static let maximumPayloadSize = 64 * 1024

    /// Parses the compact serialization in `compact` (no surrounding
    /// whitespace), taking the header's parse from `knownHeaders` when it is
    /// spelled exactly like one of them.
    init(compact: some Collection<UInt8>, knownHeaders: KnownJOSEHeaders? = nil) throws(JWSError) {
        func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<CompactJWS, JWSError> {
            Result { () throws(JWSError) in try CompactJWS(buffer: buffer, knownHeaders: knownHeaders) }
        }
        // Native strings and arrays are contiguous: no copy on the hot path.
        let parsed = compact.withContiguousStorageIfAvailable(parse) ?? Array(compact).withUnsafeBufferPointer(parse)
        self = try parsed.get()
    }

    /// Parses the compact serialization in `compact` (no surrounding whitespace).
    init(compact: String, knownHeaders: KnownJOSEHeaders? = nil) throws(JWSError) {
        try self.init(compact: compact.utf8, knownHeaders: knownHeaders)
    }

    private init(buffer: UnsafeBufferPointer<UInt8>, knownHeaders: KnownJOSEHeaders?) throws(JWSError) {
        let dots = CompactJWS.separators(in: buffer)
        guard dots.count == 2 else { throw .segmentCount(dots.count + 1) }
        let ranges: [(JWSSegment, Range<Int>)] = [
            (.header, 0..<dots.first), (.payload, dots.first + 1..<dots.second),
            (.signature, dots.second + 1..<buffer.count),
        ]
        for (segment, range) in ranges where range.isEmpty { throw .emptySegment(segment) }
        let known = knownHeaders?.header(spelled: UnsafeBufferPointer(rebasing: buffer[ranges[0].1]))
        let headerBytes = known == nil ? try CompactJWS.decode(buffer, ranges[0], limit: CompactJWS.maximumHeaderSize) : []
        let payloadBytes = try CompactJWS.decode(buffer, ranges[1], limit: CompactJWS.maximumPayloadSize)
        signature = try CompactJWS.decode(buffer, ranges[2], limit: nil)
        if let known { header = known } else { header = try CompactJWS.object(headerBytes, .header) }
        payload = try CompactJWS.object(payloadBytes, .payload)
        payloadJSON = payloadBytes
        signingInput = Array(UnsafeBufferPointer(rebasing: buffer[0..<dots.second]))
        encodedHeaderCount = dots.first
    }

    /// Whether `text` is shaped like a compact JWS: three non-empty
    /// segments of base64url characters, the first opening as a JOSE
    /// header's encoding does (`eyJ`, `{"`). Not a parse: what decides
    /// whether a `signed…` member Apple added since is a signed string to
    /// verify. Without the header's opening, a dotted word of that alphabet
    /// ("apps.apple.com", "v2.1.0") would be taken for one and refuse a
    /// genuine notification as malformed.
    static func isShaped(_ text: String) -> Bool {
        guard text.utf8.starts(with: "eyJ".utf8) else { return false }
        var segments = 1
        var segmentLength = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard segmentLength > 0 else { return false }
                segments += 1
                segmentLength = 0
            } else if Base64URL.isAlphabet(byte) {
                segmentLength += 1
            } else {
                return false
            }
        }
        return segments == 3 && segmentLength > 0
    }

    /// The number of `.` in `buffer` and the offsets of the first two. libc's
    /// memchr is vectorised: a byte loop here cost as much as the base64 decoding.
    private static func separators(in buffer: UnsafeBufferPointer<UInt8>) -> (count: Int, first: Int, second: Int) {
        guard let base = buffer.baseAddress else { return (0, 0, 0) }
        var found = (count: 0, first: 0, second: 0)
        var offset = 0
        while offset < buffer.count, let hit = memchr(base + offset, Int32(UInt8(ascii: ".")), buffer.count - offset) {
            let position = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if found.count == 0 { found.first = position } else if found.count == 1 { found.second = position }
            found.count += 1
            offset = position + 1
        }
        return found
    }

    /// Decodes one segment, refusing it before decoding when it would exceed `limit` bytes.
    private static func decode(_ buffer: UnsafeBufferPointer<UInt8>, _ segment: (JWSSegment, Range<Int>),
                               limit: Int?) throws(JWSError) -> [UInt8] {
        let (name, range) = segment
        if let limit {
            let size = Base64URL.decodedCount(ofEncodedCount: range.count)
            guard size <= limit else { throw .tooLarge(name, size: size, limit: limit) }
        }
        do {
            return try Base64URL.decode(UnsafeBufferPointer(rebasing: buffer[range]))
        } catch {
            throw JWSError(name, error, segmentStart: range.lowerBound)
        }
    }

    private static func object(_ bytes: [UInt8], _ segment: JWSSegment) throws(JWSError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw .notJSON(segment, error)
        }
        guard case .object = value else { throw .notObject(segment, found: value.typeDescription) }
        return value
    }
}

/// The three parts of a compact JWS, named as in messages.
enum JWSSegment: String, Sendable {
    case header, payload, signature
}

/// Why bytes are not a well-formed compact JWS. Offsets count bytes from the
/// start of the whole compact serialization.
enum JWSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The number of `.`-separated segments found; a compact JWS has 3.
    case segmentCount(Int)
    case emptySegment(JWSSegment)
    case padding(JWSSegment, offset: Int)
    case standardAlphabet(JWSSegment, byte: UInt8, offset: Int)
    case whitespace(JWSSegment, offset: Int)
    case invalidByte(JWSSegment, byte: UInt8, offset: Int)
    case truncated(JWSSegment)
    case nonCanonical(JWSSegment)
    /// The segment would decode to `size` bytes, more than `limit`.
    case tooLarge(JWSSegment, size: Int, limit: Int)
    case notJSON(JWSSegment, JSONError)
    /// The segment is JSON but not an object; `found` names what it is.
    case notObject(JWSSegment, found: String)

    init(_ segment: JWSSegment, _ error: Base64URLError, segmentStart: Int) {
        switch error {
        case let .padding(offset): self = .padding(segment, offset: segmentStart + offset)
        case let .standardAlphabet(byte, offset): self = .standardAlphabet(segment, byte: byte, offset: segmentStart + offset)
        case let .whitespace(_, offset): self = .whitespace(segment, offset: segmentStart + offset)
        case let .invalidByte(byte, offset): self = .invalidByte(segment, byte: byte, offset: segmentStart + offset)
        case .truncated: self = .truncated(segment)
        case .nonCanonicalEnd: self = .nonCanonical(segment)
        }
    }

    /// The rejection code: `malformed-payload` when the payload segment decodes
    /// but is not a JSON object, `malformed-jws` for everything structural.
    var code: RejectionCode {
        switch self {
        case .notJSON(.payload, _), .notObject(.payload, _): return .malformedPayload
        default: return .malformedJWS
        }
    }

    /// A predicate completing a sentence whose subject names the JWS, e.g.
    /// `signedTransactionInfo` + ` has 2 segments, a compact JWS has 3 …`.
    var description: String {
        switch self {
        case let .segmentCount(count):
            return "has \(count) segment\(count == 1 ? "" : "s"), a compact JWS has 3 (header.payload.signature)"
        case let .emptySegment(segment):
            return "has an empty \(segment) segment"
        case let .padding(segment, offset):
            return "has '=' padding in its \(segment) segment at byte \(offset); compact JWS segments are unpadded base64url"
        case let .standardAlphabet(segment, byte, offset):
            return "has '\(Character(Unicode.Scalar(byte)))' in its \(segment) segment at byte \(offset), "
                + "a standard base64 character; compact JWS uses base64url ('-' and '_')"
        case let .whitespace(segment, offset):
            return "has whitespace in its \(segment) segment at byte \(offset)"
        case let .invalidByte(segment, byte, offset):
            return "has \(JWSError.describe(byte)) in its \(segment) segment at byte \(offset), outside the base64url alphabet"
        case let .truncated(segment):
            return "has a truncated \(segment) segment (a length of 4n+1 characters is never base64url)"
        case let .nonCanonical(segment):
            return "has a non-canonical \(segment) segment (its last character sets bits beyond the data)"
        case let .tooLarge(segment, size, limit):
            return "has a \(segment) of \(size) bytes, more than the \(limit) allowed"
        case let .notJSON(segment, error):
            return "has a \(segment) that is not valid JSON (\(error))"
        case let .notObject(segment, found):
            return "has a \(segment) that is \(found), not a JSON object"
        }
    }

    private static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21, byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        let hex = Array("0123456789ABCDEF")
        return "byte 0x\(hex[Int(byte >> 4)])\(hex[Int(byte & 0xF)])"
    }
}
