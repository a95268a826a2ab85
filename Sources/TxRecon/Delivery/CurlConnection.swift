// CurlConnection: one curl easy handle of the HTTP transport, and what one
// transfer on it needs: the request's header list and body, the answer's
// capture, and curl's error message.
//
// The handle is reused for every attempt so libcurl keeps the connection to
// the backend alive; it is reset and reconfigured only when the settings
// change. Touches no spool state; every curl error becomes a
// `TransportFailure` (see `CurlFailure`), with curl's own error message.
import CCurl

/// A curl easy handle and what it reads and writes during a transfer. Not
/// Sendable on purpose: CurlMultiDriver owns it, on the event loop's thread.
final class CurlConnection {
    let handle: UnsafeMutableRawPointer
    /// curl writes its detailed message for a failed transfer here.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    /// Keeps one byte past the longest answer taken, to tell it too long.
    private let response = CurlResponseCapture(keeping: max(CurlResponseCapture.bodyPrefixLimit,
                                                            ConsumptionAnswer.bodyLimit + 1))
    private let headers = CurlHeaderList()
    /// The request's body, which curl reads during the transfer.
    private var body: UnsafeMutableRawBufferPointer = .allocate(byteCount: 4096, alignment: 1)
    /// Whether a 2xx answer's body is kept (DeliveryRequest.keepsAnswer).
    private var keepsAnswer = false
    /// The settings the handle is configured with; nil before the first
    /// transfer and after a failed configuration.
    private var configured: CurlOptions?

    init() throws(CurlTransport.StartError) {
        guard let handle = curl_easy_init() else {
            errorBuffer.deallocate()
            body.deallocate()
            throw CurlTransport.StartError("curl_easy_init failed (out of memory?)")
        }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
        body.deallocate()
    }

    /// Sets the handle up to POST `request` with `options`: the handle is
    /// then ready for curl_multi_add_handle. Returns the failure when it
    /// cannot be sent (an option curl refuses, a header with a line break).
    func prepare(_ request: DeliveryRequest, with options: CurlOptions) -> TransportFailure? {
        if configured !== options {
            configured = nil
            if let failure = configure(options) { return failure }
            configured = options
        }
        errorBuffer[0] = 0
        response.reset()
        keepsAnswer = request.keepsAnswer
        let list: UnsafeMutablePointer<curl_slist>?
        do {
            // "Expect:" sends the body at once; waiting for "100 Continue" costs a round trip.
            list = try headers.build(request.headers, then: ["Expect:"])
        } catch {
            return TransportFailure(.other, "header \(error.name) contains a line break or NUL; not sent")
        }
        // Copied: curl reads the body during the transfer, after this call.
        if request.body.count > body.count {
            body.deallocate()
            body = .allocate(byteCount: max(request.body.count, 2 * body.count), alignment: 1)
        }
        request.body.withUnsafeBytes { body.copyMemory(from: $0) }
        _ = txr_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
        _ = txr_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, body.baseAddress)
        _ = txr_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        return nil
    }

    /// What the transfer that ended with `code` came to; leaves nothing on
    /// the handle that points at the request.
    func result(_ code: CURLcode) -> TransportResult {
        _ = txr_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, nil)
        _ = txr_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, nil)
        if code == CURLE_OK || (code == CURLE_WRITE_ERROR && response.bodyTooLong) {
            var status = 0
            _ = txr_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
            // Only a refusal's body is read (for its hold reason), and a
            // 2xx's that may carry an answer to Apple; handing out the
            // buffer would make the next reset allocate a new one.
            let body: [UInt8]
            if (400...499).contains(status) {
                body = Array(response.bodyPrefix.prefix(CurlResponseCapture.bodyPrefixLimit))
            } else {
                body = keepsAnswer && (200...299).contains(status) ? response.bodyPrefix : []
            }
            return .response(status: status, retryAfter: response.retryAfter, bodyPrefix: body)
        }
        return .failure(CurlFailure.make(code, message: String(cString: errorBuffer)))
    }

    private static func setBlob(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ bytes: [UInt8]) -> CURLcode {
        bytes.withUnsafeBytes { txr_curl_setopt_blob(handle, option, $0.baseAddress, $0.count) }
    }

    /// Resets the handle (live connections survive) and applies `options`.
    /// Returns the failure when curl refuses an option, e.g. an unsupported
    /// TLS setting.
    private func configure(_ options: CurlOptions) -> TransportFailure? {
        // Checked here so that curl's UNSUPPORTED_PROTOCOL can only mean an
        // answer that is not HTTP (see CurlFailure).
        let scheme = options.url.prefix { $0 != ":" }.lowercased()
        guard scheme == "http" || scheme == "https" else {
            return TransportFailure(.other, "URL= must start with http:// or https://")
        }
        curl_easy_reset(handle)
        var codes = [("URL", txr_curl_setopt_string(handle, CURLOPT_URL, options.url))]
        codes += CurlEasy.setPostOptions(handle, timeoutMilliseconds: options.timeoutMilliseconds,
                                         connectTimeoutMilliseconds: options.connectTimeoutMilliseconds,
                                         errorBuffer: errorBuffer, response: response)
        // Stated either way: libcurl's own default over https:// is HTTP/2
        // when the server offers it. With 2, a request waits for a
        // connection that multiplexes rather than opening one more
        // (PIPEWAIT), so the deliveries in flight share one connection.
        switch options.httpVersion {
        case .http1_1:
            codes.append(("HTTP_VERSION", txr_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)))
        case .http2:
            let version = scheme == "https" ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
            codes.append(("HTTP_VERSION", txr_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, version)))
            codes.append(("PIPEWAIT", txr_curl_setopt_long(handle, CURLOPT_PIPEWAIT, 1)))
        }
        codes.append(("PRIVATE", txr_curl_setopt_pointer(handle, CURLOPT_PRIVATE,
                                                         Unmanaged.passUnretained(self).toOpaque())))
        if !options.proxyFromEnvironment {
            codes.append(("PROXY", txr_curl_setopt_string(handle, CURLOPT_PROXY, "")))
            codes.append(("NOPROXY", txr_curl_setopt_string(handle, CURLOPT_NOPROXY, "")))
        }
        // Blobs, copied by curl: it never opens the files itself.
        if let bundle = options.tls.trustedCertificates {
            // CAFile= replaces the system trust store rather than adding to
            // it: curl's default CAINFO and CAPATH go, the blob alone stays.
            codes.append(("CAINFO_BLOB", Self.setBlob(handle, CURLOPT_CAINFO_BLOB, bundle)))
            codes.append(("CAINFO", txr_curl_setopt_string(handle, CURLOPT_CAINFO, nil)))
            codes.append(("CAPATH", txr_curl_setopt_string(handle, CURLOPT_CAPATH, nil)))
        }
        if let certificate = options.tls.certificate {
            codes.append(("SSLCERT_BLOB", Self.setBlob(handle, CURLOPT_SSLCERT_BLOB, certificate)))
        }
        if let key = options.tls.key {
            codes.append(("SSLKEY_BLOB", Self.setBlob(handle, CURLOPT_SSLKEY_BLOB, key)))
        }
        guard let (name, code) = codes.first(where: { $0.1 != CURLE_OK }) else { return nil }
        return TransportFailure(.other, "curl refused option CURLOPT_\(name): \(String(cString: curl_easy_strerror(code)))")
    }
}
