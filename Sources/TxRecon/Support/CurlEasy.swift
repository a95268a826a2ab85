// CurlEasy: what the delivery workers and the App Store Server API
// client do alike with a curl easy handle: the options every POST of ours
// carries, and one POST, which hands curl the body without a copy and the
// caller's header list, and leaves neither on the handle, so nothing points
// at memory that changes between requests.
// Reports: curl's result codes, named by option.
import CCurl

enum CurlEasy {
    /// Sets the options common to every txrecon request (the POSTs, and the
    /// probe's GET): HTTP(S) only, no signals, no redirects followed (a
    /// redirect is an answer to judge), TLS verification stated so that no
    /// later change weakens it, the timeouts, and the answer captured into
    /// `response`. Returns each option's name with curl's code, for the
    /// caller to report the first refused one.
    static func setPostOptions(_ handle: UnsafeMutableRawPointer, timeoutMilliseconds: Int,
                               connectTimeoutMilliseconds: Int, errorBuffer: UnsafeMutablePointer<CChar>,
                               response: CurlResponseCapture) -> [(String, CURLcode)] {
        let context = Unmanaged.passUnretained(response).toOpaque()
        return [
            ("PROTOCOLS_STR", txr_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")),
            ("NOSIGNAL", txr_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)),
            ("POST", txr_curl_setopt_long(handle, CURLOPT_POST, 1)),
            ("FOLLOWLOCATION", txr_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)),
            ("SSL_VERIFYPEER", txr_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1)),
            ("SSL_VERIFYHOST", txr_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2)),
            ("TIMEOUT_MS", txr_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutMilliseconds)),
            ("CONNECTTIMEOUT_MS", txr_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMilliseconds)),
            ("ERRORBUFFER", txr_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)),
            ("WRITEDATA", txr_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)),
            ("HEADERDATA", txr_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)),
            ("WRITEFUNCTION", txr_curl_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                let response = Unmanaged<CurlResponseCapture>.fromOpaque(context!).takeUnretainedValue()
                return response.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
            }),
            ("HEADERFUNCTION", txr_curl_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                let response = Unmanaged<CurlResponseCapture>.fromOpaque(context!).takeUnretainedValue()
                response.receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count))
                return size * count
            }),
        ]
    }

    /// Performs the POST of `body` with `headers` (a list in the caller's
    /// storage, see CurlHeaderList), on the calling thread; blocks until
    /// curl is done. `method` (`PUT`) sends the body with another method.
    static func post(_ handle: UnsafeMutableRawPointer, body: [UInt8],
                     headers: UnsafeMutablePointer<curl_slist>?, method: String? = nil) -> CURLcode {
        guard let method else { return send(handle, body: body, headers: headers) }
        _ = txr_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
        defer { _ = txr_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, nil) }
        return send(handle, body: body, headers: headers)
    }

    private static func send(_ handle: UnsafeMutableRawPointer, body: [UInt8],
                             headers: UnsafeMutablePointer<curl_slist>?) -> CURLcode {
        body.withUnsafeBytes { bytes -> CURLcode in
            // POSTFIELDS with a null pointer would make curl read the body
            // from stdin, so an empty body points at a static empty string.
            let emptyBody = UnsafeMutableRawPointer(mutating: ("" as StaticString).utf8Start)
            let start = bytes.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? emptyBody
            _ = txr_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            _ = txr_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, start)
            _ = txr_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
            let code = curl_easy_perform(handle)
            _ = txr_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, nil)
            _ = txr_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, nil)
            return code
        }
    }

    /// Performs a GET with `headers`, on the calling thread; leaves the
    /// handle set for POST again.
    static func get(_ handle: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?) -> CURLcode {
        _ = txr_curl_setopt_long(handle, CURLOPT_HTTPGET, 1)
        _ = txr_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
        let code = curl_easy_perform(handle)
        _ = txr_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, nil)
        _ = txr_curl_setopt_long(handle, CURLOPT_POST, 1)
        return code
    }
}
