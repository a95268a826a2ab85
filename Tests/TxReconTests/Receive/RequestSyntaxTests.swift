// RequestSyntax: each head RFC 9112 says to reject, refused with its code;
// the heads real clients send (Apple, curl, nginx in front) pass.
import Testing
@testable import TxRecon

@Suite struct RequestSyntaxTests {
    static func head(_ fields: [(String, String)], method: String = "POST", target: String = "/appstore/notifications",
                     version: String = "HTTP/1.1") -> HTTPRequestHead {
        HTTPRequestHead(method: method, path: String(target.prefix { $0 != "?" }), client: "127.0.0.1",
                        version: version, target: target, fields: fields.map { (name: $0.0, value: $0.1) })
    }

    static func code(_ head: HTTPRequestHead) -> String? {
        RequestSyntax.refusal(of: head)?.code
    }

    @Test func theHeadsRealClientsSendPass() {
        #expect(Self.code(Self.head([("Host", "notifications.example.com"), ("Content-Type", "application/json"),
                                     ("Content-Length", "18794"), ("User-Agent", "App Store")])) == nil)
        #expect(Self.code(Self.head([("host", "[::1]:8081"), ("transfer-encoding", "Chunked")])) == nil)
        #expect(Self.code(Self.head([("Host", "127.0.0.1:8081"), ("Accept", "*/*")], method: "GET", target: "/healthz?probe=1&x=%41"))
            == nil)
        #expect(Self.code(Self.head([("Content-Length", "2")], version: "HTTP/1.0")) == nil, "HTTP/1.0 needs no Host")
        #expect(Self.code(Self.head([("Host", ""), ("X-Tab", "a\tb"), ("X-Text", "naïve €")])) == nil,
                "an empty Host, a tab and text beyond ASCII in a value are valid")
        #expect(Self.code(Self.head([("Host", "x"), ("Authorization", "Bearer upload-s3cr3t-7")])) == nil)
    }

    @Test func twoContentLengthsAreRefusedEvenWithEqualValues() {
        #expect(Self.code(Self.head([("Host", "x"), ("Content-Length", "0"), ("Content-Length", "50")]))
                == "duplicate-content-length")
        #expect(Self.code(Self.head([("Host", "x"), ("Content-Length", "5"), ("content-length", "5")]))
                == "duplicate-content-length")
        #expect(Self.code(Self.head([("Host", "x"), ("Content-Length", "+5")])) == "invalid-content-length")
        #expect(Self.code(Self.head([("Host", "x"), ("Content-Length", "5, 5")])) == "invalid-content-length")
    }

    @Test func contentLengthWithTransferEncodingIsRefused() {
        let refusal = RequestSyntax.refusal(of: Self.head([("Host", "x"), ("Content-Length", "5"),
                                                           ("Transfer-Encoding", "chunked")]))
        #expect(refusal?.status == 400 && refusal?.code == "content-length-with-transfer-encoding")
        #expect(refusal?.headers.map(\.name) == ["Connection"] && refusal?.headers.map(\.value) == ["close"],
                "the connection ends after the answer")
    }

    @Test func transferCodingsOtherThanOneFinalChunkedAreRefused() {
        #expect(Self.code(Self.head([("Host", "x"), ("Transfer-Encoding", "chunked, gzip")]))
                == "invalid-transfer-encoding")
        #expect(Self.code(Self.head([("Host", "x"), ("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")]))
                == "invalid-transfer-encoding", "two field lines make one list: chunked twice")
        #expect(Self.code(Self.head([("Host", "x"), ("Transfer-Encoding", "identity")])) == "invalid-transfer-encoding")
        let gzip = RequestSyntax.refusal(of: Self.head([("Host", "x"), ("Transfer-Encoding", "gzip, chunked")]))
        #expect(gzip?.status == 501 && gzip?.code == "unsupported-transfer-encoding")
        #expect(Self.code(Self.head([("Transfer-Encoding", "chunked")], version: "HTTP/1.0"))
                == "transfer-encoding-in-http-1.0")
    }

    @Test func aFieldNameThatIsNotATokenIsRefused() {
        #expect(Self.code(Self.head([("Host ", "x")])) == "invalid-field-name", "whitespace before the colon")
        #expect(Self.code(Self.head([("Host", "x"), ("Transfer-Encoding\t", "chunked")])) == "invalid-field-name")
        #expect(Self.code(Self.head([("Host", "x"), (" X-Folded", "y")])) == "invalid-field-name")
        #expect(Self.code(Self.head([("Host", "x"), ("X(1)", "y")])) == "invalid-field-name")
        #expect(Self.code(Self.head([("Host", "x"), ("", "y")])) == "invalid-field-name")
    }

    @Test func aControlCharacterInAFieldValueIsRefused() {
        #expect(Self.code(Self.head([("Host", "x"), ("X-Bare-CR", "a\rTransfer-Encoding: chunked")]))
                == "invalid-field-value")
        #expect(Self.code(Self.head([("Host", "x\u{7F}")])) == "invalid-field-value")
    }

    @Test func hostMustBeThereOnceAndBeAHost() {
        #expect(Self.code(Self.head([("Content-Length", "2")])) == "missing-host")
        #expect(Self.code(Self.head([("Host", "a"), ("Host", "b")])) == "duplicate-host")
        #expect(Self.code(Self.head([("Host", "a b")])) == "invalid-host")
        #expect(Self.code(Self.head([("Host", "a/b")])) == "invalid-host")
        #expect(Self.code(Self.head([("Host", "user@a")])) == "invalid-host")
    }

    @Test func aTargetWithAControlASpaceOrABrokenEscapeIsRefused() {
        for target in ["/appstore/notifications%00.txt", "/healthz%00", "/a%0d%0aX: y", "/a%7f", "/a b", "/a%zz",
                       "/a%4", "/a#b", "/caf\u{E9}", "/a?b=%00"] {
            #expect(Self.code(Self.head([("Host", "x")], target: target)) == "invalid-target", "\(target)")
        }
        #expect(Self.code(Self.head([("Host", "x")], target: "/%65nvelopes")) == nil,
                "an escape of a printable byte is a path like another; nothing is served at it (404)")
    }

    @Test func aMethodThatIsNotATokenIsRefused() {
        #expect(Self.code(Self.head([("Host", "x")], method: "PO\u{1}ST")) == "invalid-method")
    }

    @Test func everyRefusalIsOneAClientCanRepeatAndIsLoggedAtMostOnceASecond() {
        for code in RequestSyntax.codes {
            #expect(ReceiveRefusal(400, code, "").isRepeatable, "\(code)")
        }
        for status in [400, 413, 414, 431, 505, 418] {
            #expect(HTTPServer.libraryRefusal(status).isRepeatable, "libmicrohttpd's \(status)")
        }
        #expect(!ReceiveRefusal(400, "unknown-format", "").isRepeatable, "a body's verdict is logged each time")
    }
}
