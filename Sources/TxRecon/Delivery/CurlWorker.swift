// CurlWorker: one dedicated thread's curl handle and the loop that runs
// attempts on it, one at a time.
//
// The handle is reused for every attempt so libcurl keeps the connection to
// the backend alive; it is reset and reconfigured only when the settings
// change. Touches no spool state; every curl error becomes a
// `TransportFailure` (see `CurlFailure`), with curl's own error message.
import CCurl

/// A curl easy handle and what it writes into. Not Sendable on purpose: it is
/// made by `CurlTransport.init` and then owned by exactly one worker thread.
final class CurlWorker {
    private let handle: UnsafeMutableRawPointer
    /// curl writes its detailed message for a failed transfer here.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    /// Keeps one byte past the longest answer taken, to tell it too long.
    private let response = CurlResponseCapture(keeping: max(CurlResponseCapture.bodyPrefixLimit,
                                                            ConsumptionAnswer.bodyLimit + 1))
    private let headers = CurlHeaderList()
    /// The settings the handle is configured with; nil before the first
    /// attempt and after a failed configuration.
    private var configured: CurlOptions?

    init() throws(CurlTransport.StartError) {
        guard let handle = curl_easy_init() else {
            errorBuffer.deallocate()
            throw CurlTransport.StartError("curl_easy_init failed (out of memory?)")
        }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Runs attempts from `jobs` until the queue is closed. Blocks: call on a
    /// dedicated thread only.
    func run(_ jobs: HandoffQueue<CurlJob>) {
        while let job = jobs.take() {
            job.exchange.run { request in attempt(request, with: job.options) }
        }
    }

    private func attempt(_ request: DeliveryRequest, with options: CurlOptions) -> TransportResult {
        if configured !== options {
            configured = nil
            if let failure = configure(options) { return .failure(failure) }
            configured = options
        }
        // "Expect:" sends the body at once; waiting for "100 Continue" costs a round trip.
        errorBuffer[0] = 0
        response.reset()
        let code: CURLcode
        do {
            code = try headers.withList(request.headers, then: ["Expect:"]) { list in
                CurlEasy.post(handle, body: request.body, headers: list)
            }
        } catch {
            return .failure(TransportFailure(.other, "header \(error.name) contains a line break or NUL; not sent"))
        }

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
                body = request.keepsAnswer && (200...299).contains(status) ? response.bodyPrefix : []
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
