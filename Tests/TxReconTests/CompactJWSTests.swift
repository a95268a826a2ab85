import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct CompactJWSTests {
    private func parse(_ text: String) -> Result<CompactJWS, JWSError> {
        Result { () throws(JWSError) in try CompactJWS(compact: text) }
    }

    private func error(_ text: String) -> JWSError? {
        if case let .failure(error) = parse(text) { return error }
        return nil
    }

    private let payload = JSONValue.object([("transactionId", .string("1")), ("signedDate", .integer(5))])

    @Test func headerPayloadSignatureAndSigningInputAreKept() throws {
        let signature: [UInt8] = Array(0..<64)
        let text = TestJWS.make(payload: payload, signature: signature)
        let jws = try parse(text).get()
        #expect(jws.header == TestJWS.defaultHeader)
        #expect(jws.payload == payload)
        #expect(jws.signature == signature)
        let expectedInput = text.split(separator: ".").prefix(2).joined(separator: ".")
        #expect(jws.signingInput == Array(expectedInput.utf8))
    }

    @Test func everyBase64URLTailLengthDecodes() throws {
        // Payloads of 3n, 3n+1 and 3n+2 bytes end in full, 2- and 3-character groups.
        for padding in ["", " ", "  "] {
            let text = TestJWS.make(headerJSON: #"{"alg":"ES256"}"#, payloadJSON: #"{"a":"b"}"# + padding)
            #expect(try parse(text).get().payload == .object([("a", .string("b"))]))
        }
    }

    @Test func twoOrFourSegmentsAreRefused() {
        let parts = TestJWS.make(payload: payload).split(separator: ".").map(String.init)
        #expect(error(parts[0] + "." + parts[1]) == .segmentCount(2))
        #expect(error(parts.joined(separator: ".") + "." + parts[2]) == .segmentCount(4))
        #expect(error(parts[0]) == .segmentCount(1))
    }

    @Test func emptySegmentsAreRefused() {
        let parts = TestJWS.make(payload: payload).split(separator: ".").map(String.init)
        #expect(error("." + parts[1] + "." + parts[2]) == .emptySegment(.header))
        #expect(error(parts[0] + ".." + parts[2]) == .emptySegment(.payload))
        #expect(error(parts[0] + "." + parts[1] + ".") == .emptySegment(.signature))
    }

    @Test func paddingIsRefused() {
        // A one-byte signature encodes to two characters; padded it would take four.
        let text = TestJWS.make(payload: payload, signature: [0xFF]) + "=="
        guard case let .padding(segment, offset) = error(text) else {
            Issue.record("expected padding, got \(String(describing: error(text)))")
            return
        }
        #expect(segment == .signature)
        #expect(offset == text.utf8.count - 2)
    }

    @Test func standardAlphabetCharactersAreRefused() {
        // 0xFB 0xFF encodes to "-_8" in base64url and "+/8" in standard base64.
        let text = TestJWS.make(payload: payload, signature: [0xFB, 0xFF])
        #expect(text.hasSuffix("-_8"))
        let standard = String(text.dropLast(3)) + "+/8"
        #expect(error(standard) == .standardAlphabet(.signature, byte: UInt8(ascii: "+"), offset: standard.utf8.count - 3))
    }

    @Test func whitespaceInsideASegmentIsRefused() {
        var text = TestJWS.make(payload: payload)
        text.insert("\n", at: text.index(text.startIndex, offsetBy: 10))
        #expect(error(text) == .whitespace(.header, offset: 10))
    }

    @Test func bytesOutsideTheAlphabetAreRefused() {
        let parts = TestJWS.make(payload: payload).split(separator: ".").map(String.init)
        let text = parts[0] + "." + parts[1] + ".ab*d"
        #expect(error(text) == .invalidByte(.signature, byte: UInt8(ascii: "*"), offset: text.utf8.count - 2))
    }

    @Test func truncatedSegmentsAreRefused() {
        let parts = TestJWS.make(payload: payload).split(separator: ".").map(String.init)
        // 64 signature bytes take 86 characters; 85 is 4n+1.
        #expect(error(parts[0] + "." + parts[1] + "." + String(parts[2].dropLast())) == .truncated(.signature))
    }

    @Test func nonCanonicalEndingsAreRefused() {
        // One byte 0xFF is "_w"; "_x" decodes to the same byte with a stray low bit.
        let parts = TestJWS.make(payload: payload, signature: [0xFF]).split(separator: ".").map(String.init)
        #expect(parts[2] == "_w")
        #expect(error(parts[0] + "." + parts[1] + "._x") == .nonCanonical(.signature))
    }

    @Test func duplicateHeaderKeysAreRefused() {
        let text = TestJWS.make(headerJSON: #"{"alg":"ES256","alg":"none"}"#, payloadJSON: #"{"a":1}"#)
        guard case .notJSON(.header, _) = error(text) else {
            Issue.record("expected a header JSON error, got \(String(describing: error(text)))")
            return
        }
        #expect(error(text)?.code == .malformedJWS)
    }

    @Test func duplicatePayloadKeysAreAPayloadError() {
        let text = TestJWS.make(headerJSON: #"{"alg":"ES256"}"#, payloadJSON: #"{"a":1,"a":2}"#)
        guard case .notJSON(.payload, _) = error(text) else {
            Issue.record("expected a payload JSON error, got \(String(describing: error(text)))")
            return
        }
        #expect(error(text)?.code == .malformedPayload)
    }

    @Test func nonObjectHeaderAndPayloadAreRefused() {
        #expect(error(TestJWS.make(headerJSON: "[1]", payloadJSON: "{}")) == .notObject(.header, found: "an array"))
        #expect(error(TestJWS.make(headerJSON: "{}", payloadJSON: "\"x\"")) == .notObject(.payload, found: "a string"))
    }

    @Test func anOversizeHeaderIsRefusedBeforeDecoding() {
        let big = #"{"alg":"ES256","pad":""# + String(repeating: "x", count: CompactJWS.maximumHeaderSize) + #""}"#
        guard case let .tooLarge(segment, size, limit) = error(TestJWS.make(headerJSON: big, payloadJSON: "{}")) else {
            Issue.record("expected tooLarge")
            return
        }
        #expect(segment == .header)
        #expect(size == big.utf8.count)
        #expect(limit == 16 * 1024)
    }

    @Test func anOversizePayloadIsRefused() {
        let big = #"{"pad":""# + String(repeating: "x", count: CompactJWS.maximumPayloadSize) + #""}"#
        guard case .tooLarge(.payload, _, 65_536) = error(TestJWS.make(headerJSON: "{}", payloadJSON: big)) else {
            Issue.record("expected tooLarge payload")
            return
        }
    }

    @Test func aHeaderAtTheLimitIsAccepted() throws {
        let prefix = #"{"pad":""#
        let filler = String(repeating: "x", count: CompactJWS.maximumHeaderSize - prefix.utf8.count - 2)
        let header = prefix + filler + #""}"#
        #expect(header.utf8.count == CompactJWS.maximumHeaderSize)
        _ = try parse(TestJWS.make(headerJSON: header, payloadJSON: "{}")).get()
    }

    @Test func messagesNameTheSegmentAndTheRule() {
        #expect(JWSError.segmentCount(2).description == "has 2 segments, a compact JWS has 3 (header.payload.signature)")
        #expect(JWSError.invalidByte(.payload, byte: 0x00, offset: 7).description
            == "has byte 0x00 in its payload segment at byte 7, outside the base64url alphabet")
    }
}
