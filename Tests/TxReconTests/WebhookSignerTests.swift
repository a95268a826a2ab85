import FoundationEssentials
import Testing
@testable import TxRecon

@Suite struct WebhookSignerTests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test func hmacMatchesRFC4231TestCase1() {
        let mac = WebhookSigner.hmacSHA256(key: [UInt8](repeating: 0x0B, count: 20), message: Array("Hi There".utf8))
        #expect(hex(mac) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func hmacMatchesRFC4231TestCase2() {
        let mac = WebhookSigner.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func hmacMatchesRFC4231TestCase3() {
        let mac = WebhookSigner.hmacSHA256(key: [UInt8](repeating: 0xAA, count: 20),
                                           message: [UInt8](repeating: 0xDD, count: 50))
        #expect(hex(mac) == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
    }

    @Test func hmacMatchesRFC4231TestCase6WithAKeyLongerThanABlock() {
        let mac = WebhookSigner.hmacSHA256(key: [UInt8](repeating: 0xAA, count: 131),
                                           message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(hex(mac) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func base64PadsLikeRFC4648() {
        #expect(WebhookSigner.base64([]) == "")
        #expect(WebhookSigner.base64(Array("f".utf8)) == "Zg==")
        #expect(WebhookSigner.base64(Array("fo".utf8)) == "Zm8=")
        #expect(WebhookSigner.base64(Array("foobar".utf8)) == "Zm9vYmFy")
    }

    /// The example of the Standard Webhooks specification.
    @Test func signatureMatchesTheStandardWebhooksExample() throws {
        let key = try #require(Data(base64Encoded: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let signer = WebhookSigner(key: Array(key))
        let signature = signer.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                         body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func descriptionNeverShowsTheKey() {
        let signer = WebhookSigner(key: Array("secret-key".utf8))
        #expect(!"\(signer)".contains("secret"))
    }
}
