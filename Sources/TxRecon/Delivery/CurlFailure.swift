// CurlFailure: how a failed curl transfer is reported to the engine.
//
// Every failure means "retry later" for the item; the kind only tells the
// operator where to look (network, TLS setup, DNS, the backend's answer).
// Touches nothing, reports nothing itself.
import CCurl

enum CurlFailure {
    /// The failure for curl's `code`, worded with `message` (curl's error
    /// buffer) or, when that is empty, curl's generic text for the code.
    static func make(_ code: CURLcode, message: String) -> TransportFailure {
        let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        return TransportFailure(kind(of: code), text)
    }

    static func kind(of code: CURLcode) -> TransportFailure.Kind {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_SEND_ERROR, CURLE_RECV_ERROR:
            return .connect
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dns
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND,
             CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT, CURLE_USE_SSL_FAILED:
            return .tls
        // UNSUPPORTED_PROTOCOL: an answer that is not HTTP at all ("Received
        // HTTP/0.9 when not allowed"); PARTIAL_FILE: the body ended early;
        // GOT_NOTHING: the connection closed without an answer.
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING,
             CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3:
            return .protocolError
        default:
            return .other
        }
    }
}
