// RequestSyntax: the request heads `txrecon receive` refuses because RFC 9112
// and RFC 9110 say to, checked before anything routes them. Each is a head
// that a proxy in front and the receiver could frame or route differently,
// which is how a request is smuggled past the proxy: the bytes one of them
// takes for a body the other takes for a request of its own, or a path one
// of them blocks the other serves. libmicrohttpd 0.9.75 lets them through
// (HTTPServer says what it does check):
//
//   invalid-method        a method that is not a token (RFC 9112, 3.1)
//   invalid-target        the request-target holds a byte that is not visible
//                         ASCII (a space, a control, UTF-8), a `#`, a `%` not
//                         followed by two hex digits, or a %-escape of a
//                         control (`%00` cut the path short once decoded)
//   invalid-field-name    a field name that is not a token: whitespace before
//                         the colon (`Host : x`), a field line starting with
//                         whitespace, any other separator (RFC 9112, 5.1)
//   invalid-field-value   a control character other than HTAB in a value,
//                         a bare CR among them (RFC 9110, 5.5)
//   missing-host          HTTP/1.1 without Host; duplicate-host, two of them;
//   invalid-host          one that is no host[:port] (RFC 9112, 3.2)
//   duplicate-content-length, invalid-content-length
//                         more than one Content-Length field, even with
//                         equal values, or one that is not digits (6.3)
//   content-length-with-transfer-encoding
//                         both: a proxy may frame by either (6.1, 6.3)
//   transfer-encoding-in-http-1.0   (6.1)
//   invalid-transfer-encoding       chunked not the last coding (6.3)
//   501 unsupported-transfer-encoding   a coding besides chunked
//
// All are 400 but the last, with Connection: close: the connection ends
// after the answer, so nothing after the head is read as a request. Pure;
// logs nothing (Reception.report logs them, at most once a second per client).

enum RequestSyntax {
    /// The refusal of `head`, or nil when it may be routed.
    static func refusal(of head: HTTPRequestHead) -> ReceiveRefusal? {
        if !isToken(head.method) {
            return refuse("invalid-method", "the method is not a token (RFC 9112, 3.1)")
        }
        if let problem = targetProblem(head.target) {
            return refuse("invalid-target", "the request-target \(problem) (RFC 9112, 3.2)")
        }
        for field in head.fields {
            if !isToken(field.name) {
                return refuse("invalid-field-name", "a header field name is not a token: whitespace before its colon, "
                    + "a line starting with whitespace or another separator (RFC 9112, 5.1)")
            }
            if field.value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                return refuse("invalid-field-value", "the value of \(field.name) holds a control character "
                    + "(RFC 9110, 5.5)")
            }
        }
        if let refusal = hostRefusal(head) { return refusal }
        return framingRefusal(head)
    }

    /// The codes above: refusals a client can send as fast as it likes.
    static let codes: Set<String> = [
        "invalid-method", "invalid-target", "invalid-field-name", "invalid-field-value", "missing-host", "duplicate-host", "invalid-host",
        "duplicate-content-length", "invalid-content-length", "content-length-with-transfer-encoding",
        "transfer-encoding-in-http-1.0", "invalid-transfer-encoding", "unsupported-transfer-encoding",
    ]

    private static func refuse(_ code: String, _ detail: String, status: Int = 400) -> ReceiveRefusal {
        ReceiveRefusal(status, code, detail, headers: [("Connection", "close")])
    }

    // MARK: Request line

    /// What is wrong with `target`, in words, or nil. Not decoded: routes
    /// compare it as sent, so `/%65nvelopes` is a path nothing is served
    /// at, never `/envelopes`.
    static func targetProblem(_ target: String) -> String? {
        let bytes = Array(target.utf8)
        guard !bytes.isEmpty else { return "is empty" }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard (0x21...0x7E).contains(byte), byte != UInt8(ascii: "#") else {
                return "holds a byte that is not visible ASCII, or a '#'"
            }
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return "holds a '%' not followed by two hexadecimal digits" }
                let decoded = high << 4 | low
                if decoded < 0x20 || decoded == 0x7F { return "holds a %-escaped control character such as %00" }
                index += 3
            } else {
                index += 1
            }
        }
        return nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    // MARK: Fields

    /// RFC 9110, 5.6.2: `token = 1*tchar`.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
        }
    }

    /// Host: one, made of what a host and port are made of (RFC 3986's
    /// reg-name, IPv4 and IP-literal characters); none only before HTTP/1.1.
    private static func hostRefusal(_ head: HTTPRequestHead) -> ReceiveRefusal? {
        let hosts = head.values(of: "Host")
        if hosts.count > 1 { return refuse("duplicate-host", "more than one Host field (RFC 9112, 3.2)") }
        guard let host = hosts.first else {
            return head.version == "HTTP/1.0" ? nil
                : refuse("missing-host", "an \(head.version) request without Host (RFC 9112, 3.2)")
        }
        let allowed = Array("-._~!$&'()*+,;=:[]%".utf8)
        let valid = host.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || allowed.contains(byte)
        }
        return valid ? nil : refuse("invalid-host", "the Host field is no host[:port] (RFC 9112, 3.2)")
    }

    /// Content-Length and Transfer-Encoding: one way to find the body's end.
    private static func framingRefusal(_ head: HTTPRequestHead) -> ReceiveRefusal? {
        let lengths = head.values(of: "Content-Length")
        if lengths.count > 1 {
            return refuse("duplicate-content-length", "more than one Content-Length field: the body's length is "
                + "ambiguous (RFC 9112, 6.3)")
        }
        if let length = lengths.first,
           length.isEmpty || !length.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            return refuse("invalid-content-length", "Content-Length is not a number (RFC 9112, 6.3)")
        }
        let encodings = head.values(of: "Transfer-Encoding")
        guard !encodings.isEmpty else { return nil }
        if !lengths.isEmpty {
            return refuse("content-length-with-transfer-encoding", "both Content-Length and Transfer-Encoding: the "
                + "body's length is ambiguous (RFC 9112, 6.1)")
        }
        if head.version == "HTTP/1.0" {
            return refuse("transfer-encoding-in-http-1.0", "Transfer-Encoding in an HTTP/1.0 request (RFC 9112, 6.1)")
        }
        // Field lines of one name make one list (RFC 9110, 5.3).
        let codings = encodings.joined(separator: ",").split(separator: ",")
            .map { $0.trimmingASCIISpaces().lowercased() }
        guard codings.last == "chunked", codings.filter({ $0 == "chunked" }).count == 1 else {
            return refuse("invalid-transfer-encoding", "chunked is not the last transfer coding, or is there twice: "
                + "the body's length cannot be known (RFC 9112, 6.3)")
        }
        guard codings.count == 1 else {
            return refuse("unsupported-transfer-encoding", "a transfer coding besides chunked, which the receiver does "
                + "not decode (RFC 9112, 6.1)", status: 501)
        }
        return nil
    }
}
