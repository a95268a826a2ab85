// ES256PublicKeyTests: the DER ECDSA-Sig-Value written for OpenSSL from a
// JOSE r‖s, and signatures of every shape it takes verifying (OpenSSL
// refuses a signature whose DER is not the canonical one).
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct ES256PublicKeyTests {
    static func der(_ raw: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0xEE, count: ES256PublicKey.maximumDERLength)
        let count = raw.withUnsafeBufferPointer { raw in
            output.withUnsafeMutableBufferPointer { ES256PublicKey.writeDER(raw, to: $0) }
        }
        return Array(output.prefix(count))
    }

    static func repeating(_ byte: UInt8, _ count: Int) -> [UInt8] {
        [UInt8](repeating: byte, count: count)
    }

    @Test func eachHalfIsWrittenWithoutLeadingZerosAndWithAZeroBeforeAHighBit() {
        let r = [0x00, 0x00, 0x7F] + Self.repeating(0x11, 29)
        let s = [0x80] + Self.repeating(0x22, 31)
        #expect(Self.der(r + s) == [0x30, 0x43, 0x02, 0x1E, 0x7F] + Self.repeating(0x11, 29)
            + [0x02, 0x21, 0x00, 0x80] + Self.repeating(0x22, 31))
        let zeroThenHighBit = [0x00, 0x80] + Self.repeating(0x33, 30)
        #expect(Self.der(zeroThenHighBit + Self.repeating(0x01, 32)) == [0x30, 0x44, 0x02, 0x20, 0x00, 0x80]
            + Self.repeating(0x33, 30) + [0x02, 0x20] + Self.repeating(0x01, 32))
    }

    @Test func zeroIsOneZeroByte() {
        #expect(Self.der(Self.repeating(0, 64)) == [0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00])
        #expect(Self.der(Self.repeating(0, 63) + [0x80]) == [0x30, 0x07, 0x02, 0x01, 0x00, 0x02, 0x02, 0x00, 0x80])
    }

    @Test func theLongestSignatureFillsTheBuffer() {
        #expect(Self.der(Self.repeating(0xFF, 64)).count == ES256PublicKey.maximumDERLength)
    }

    @Test func openSSLReadsBackTheSignatureWritten() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<512 {
            var raw = (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Every shape of half: leading zero bytes, a high first byte.
            if round % 4 == 1 { raw[0] = 0 }
            if round % 4 == 2 { raw.replaceSubrange(32..<34, with: [0, 0]) }
            if round % 4 == 3 { raw[0] |= 0x80; raw[32] |= 0x80 }
            #expect(ES256PrivateKey.joseSignature(fromDER: Self.der(raw)) == raw, "r‖s \(raw)")
        }
    }

    /// Signs transactions until the signatures took each shape (a first
    /// byte of r or of s zero, or at least 0x80): each one verifies.
    @Test func signaturesOfEveryShapeVerify() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        var shapesSeen = Set<String>()
        for attempt in 0..<20_000 where shapesSeen.count < 4 {
            let jws = TestPKI.sign(payload: TestJWS.transactionPayload(transactionId: String(3_000_000_000 + attempt)))
            let signature = try CompactJWS(compact: jws).signature
            let shapes = [signature[0] == 0 ? "r zero" : nil, signature[0] >= 0x80 ? "r high" : nil,
                          signature[32] == 0 ? "s zero" : nil, signature[32] >= 0x80 ? "s high" : nil]
                .compactMap { $0 }
            guard !shapes.allSatisfy(shapesSeen.contains) else { continue }
            #expect(intakeVerdict(jws, verifier) == nil, "\(shapes)")
            shapesSeen.formUnion(shapes)
        }
        #expect(shapesSeen.count == 4)
    }
}
