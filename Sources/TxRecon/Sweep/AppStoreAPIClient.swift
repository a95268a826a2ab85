// AppStoreAPIClient: the App Store Server API endpoints txrecon calls (Get
// Notification History for `txrecon sweep`; Request a Test Notification and
// Get Test Notification Status for `txrecon probe`; Get All Subscription
// Statuses for `txrecon reconcile`; Get Transaction History for `txrecon
// import`; Look Up Order ID and Get Transaction Info for `txrecon lookup`)
// over libcurl's easy interface, one blocking request at a time.
//
// The commands that call it are short-lived and pace their requests one
// after another, so a single reused handle (one kept-alive connection to
// Apple) on the command's own thread is all it needs; it never runs on
// Swift's cooperative pool. Each request carries a freshly signed token
// (`Authorization: Bearer …`); a history window's pages the same JSON body,
// the page's `paginationToken` in the query. Touches no files; every
// outcome, including curl failures, is a `HistoryAnswer` or an `APIAnswer`;
// only creating the handle throws. Nothing is logged, and neither the token nor a signed
// payload ever appears in an error.
import CCurl

/// What one Get Notification History request came back with.
enum HistoryAnswer: Equatable {
    /// HTTP 200 with a page.
    case page(NotificationHistoryPage)
    /// Any other HTTP status, with Apple's error code when it sent one.
    case refused(AppStoreAPIError)
    /// HTTP 200 whose body is not a page.
    case malformed(String)
    /// No HTTP answer: DNS, connection, TLS, timeout; curl's message.
    case unreachable(String)
}

/// What a request other than the history came back with.
enum APIAnswer<Value: Equatable>: Equatable {
    /// HTTP 200, and what its body says.
    case answered(Value)
    /// Any other HTTP status, with Apple's error code when it sent one.
    case refused(AppStoreAPIError)
    /// HTTP 200 whose body is not what the endpoint returns.
    case malformed(String)
    /// No HTTP answer: DNS, connection, TLS, timeout; curl's message.
    case unreachable(String)

    /// The body of a 200 read by `read` (a failure: malformed).
    func map<Other>(_ read: (Value) -> Result<Other, APIReadFailure>) -> APIAnswer<Other> {
        switch self {
        case let .answered(value):
            switch read(value) {
            case let .success(other): return .answered(other)
            case let .failure(failure): return .malformed(failure.description)
            }
        case let .refused(error): return .refused(error)
        case let .malformed(reason): return .malformed(reason)
        case let .unreachable(reason): return .unreachable(reason)
        }
    }
}

/// A curl handle talking to one App Store Server API base URL. Not Sendable
/// on purpose: it belongs to the sweep's thread.
package final class AppStoreAPIClient {
    /// The endpoints' paths under the base URL.
    static let historyPath = "/inApps/v1/notifications/history"
    static let testNotificationPath = "/inApps/v1/notifications/test"
    static let subscriptionsPath = "/inApps/v1/subscriptions"
    static let lookupPath = "/inApps/v1/lookup"
    static let transactionsPath = "/inApps/v1/transactions"
    static let historyV2Path = "/inApps/v2/history"
    static let consumptionPath = "/inApps/v2/transactions/consumption"
    /// The whole exchange, connect included: 60 s.
    static let timeoutMilliseconds = 60_000
    /// Opening the connection: 10 s.
    static let connectTimeoutMilliseconds = 10_000
    /// The largest answer read, bytes: 16 MiB. A page holds at most 20
    /// notifications of about 15 KiB each.
    static let answerLimit = 16 << 20

    /// `BaseURL=` without a trailing slash.
    let baseURL: String
    /// `baseURL` followed by `historyPath`.
    var endpoint: String { baseURL + Self.historyPath }
    private let tokens: APITokenIssuer
    /// The proxy credentials of the environment (ProxyCredentials).
    private let proxySecrets = ProxyCredentials.secrets(in: ProcessEnvironment.current)
    private let clock: any SweepClock
    private let handle: UnsafeMutableRawPointer
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    private let response = CurlResponseCapture(keeping: AppStoreAPIClient.answerLimit,
                                               readingAtMost: AppStoreAPIClient.answerLimit)
    private let headers = CurlHeaderList()

    /// curl could not be set up (out of memory, or an option this libcurl
    /// refuses); the sweep cannot run.
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    package init(baseURL: String, tokens: APITokenIssuer, clock: any SweepClock) throws(StartError) {
        let initialization = CurlLibrary.initialization
        guard initialization == CURLE_OK else {
            errorBuffer.deallocate()
            throw StartError(description: "curl_global_init failed: \(String(cString: curl_easy_strerror(initialization)))")
        }
        guard let handle = curl_easy_init() else {
            errorBuffer.deallocate()
            throw StartError(description: "curl_easy_init failed (out of memory?)")
        }
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.tokens = tokens
        self.clock = clock
        self.handle = handle
        if let refused = configure() {
            throw StartError(description: "curl refused option CURLOPT_\(refused)")
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Asks for one page of `request`; the first page of a window without a
    /// token, the next ones with the token the previous page gave.
    func notificationHistory(_ request: NotificationHistoryRequest, paginationToken: String?) -> HistoryAnswer {
        var url = endpoint
        if let paginationToken {
            guard let escaped = escape(paginationToken) else { return .unreachable("out of memory") }
            url += "?paginationToken=" + escaped
        }
        switch exchange(url, post: request.body) {
        case let .unreachable(reason): return .unreachable(reason)
        case let .malformed(reason): return .malformed(reason)
        case let .refused(error): return .refused(error)
        case let .answered(body):
            do {
                return .page(try NotificationHistoryPage(json: body))
            } catch {
                return .malformed(error.description)
            }
        }
    }

    /// Get All Subscription Statuses of the customer `transactionId` (any
    /// of their transaction ids) belongs to.
    func subscriptionStatuses(_ transactionId: String) -> APIAnswer<SubscriptionStatuses> {
        guard let escaped = escape(transactionId) else { return .unreachable("out of memory") }
        return exchange(baseURL + Self.subscriptionsPath + "/" + escaped, post: nil).map { body in
            Result { () throws(APIReadFailure) in try SubscriptionStatuses(json: body) }
        }
    }

    /// Look Up Order ID: the transactions of the order a customer's receipt names.
    func orderLookup(_ orderID: String) -> APIAnswer<OrderLookup> {
        guard let escaped = escape(orderID) else { return .unreachable("out of memory") }
        return exchange(baseURL + Self.lookupPath + "/" + escaped, post: nil).map { body in
            Result { () throws(APIReadFailure) in try OrderLookup(json: body) }
        }
    }

    /// Get Transaction Info: one transaction, signed.
    func transactionInfo(_ transactionId: String) -> APIAnswer<String> {
        guard let escaped = escape(transactionId) else { return .unreachable("out of memory") }
        return exchange(baseURL + Self.transactionsPath + "/" + escaped, post: nil).map { body in
            guard let signed = (try? JSONValue.parse(body))?["signedTransactionInfo"]?.stringValue, !signed.isEmpty else {
                return .failure(APIReadFailure("the answer has no signedTransactionInfo string"))
            }
            return .success(signed)
        }
    }

    /// Get Transaction History (v2): one page of the customer's history,
    /// oldest first; the first without a revision, the next ones with the
    /// revision the previous page gave (the same query otherwise).
    func transactionHistory(_ transactionId: String, revision: String?) -> APIAnswer<TransactionHistoryPage> {
        guard let escaped = escape(transactionId) else { return .unreachable("out of memory") }
        var url = baseURL + Self.historyV2Path + "/" + escaped + "?sort=ASCENDING"
        if let revision {
            guard let value = escape(revision) else { return .unreachable("out of memory") }
            url += "&revision=" + value
        }
        return exchange(url, post: nil).map { body in
            Result { () throws(APIReadFailure) in try TransactionHistoryPage(json: body) }
        }
    }

    /// Send Consumption Information (v2, `PUT …/consumption/{id}`, 202) or
    /// Finish Transaction (`POST …/transactions/{id}/finish`) for `entry`:
    /// answered once Apple took it (any 2xx).
    func send(_ entry: OutboxEntry) -> APIAnswer<[UInt8]> {
        guard let escaped = escape(entry.transactionId) else { return .unreachable("out of memory") }
        switch entry.kind {
        case .consumption:
            var body: [UInt8] = []
            entry.consumptionInformation?.write(to: &body)
            return exchange(baseURL + Self.consumptionPath + "/" + escaped, post: body, method: "PUT",
                            accepting: 200...299)
        case .finish:
            return exchange(baseURL + Self.transactionsPath + "/" + escaped + "/finish", post: [],
                            accepting: 200...299)
        }
    }

    /// Request a Test Notification: Apple sends a TEST notification to the
    /// environment's notification URL; its token follows it.
    func requestTestNotification() -> APIAnswer<String> {
        exchange(baseURL + Self.testNotificationPath, post: []).map { body in
            guard let token = (try? JSONValue.parse(body))?["testNotificationToken"]?.stringValue, !token.isEmpty else {
                return .failure(APIReadFailure("the answer has no testNotificationToken string"))
            }
            return .success(token)
        }
    }

    /// Get Test Notification Status for `token`.
    func testNotificationStatus(_ token: String) -> APIAnswer<TestNotificationStatus> {
        guard let escaped = escape(token) else { return .unreachable("out of memory") }
        return exchange(baseURL + Self.testNotificationPath + "/" + escaped, post: nil).map { body in
            Result { () throws(APIReadFailure) in try TestNotificationStatus(json: body) }
        }
    }

    /// One request to `url` (a POST of `post`, or `method` with it as the
    /// body, or a GET when nil) with a fresh token; the body of an answer
    /// whose status is `accepting` (200), or what else came back.
    private func exchange(_ url: String, post body: [UInt8]?, method: String? = nil,
                          accepting: ClosedRange<Int> = 200...200) -> APIAnswer<[UInt8]> {
        guard let token = tokens.token(nowMilliseconds: clock.wallMilliseconds) else {
            return .unreachable("OpenSSL could not sign the request token")
        }
        let fields = [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
                      ("Accept", "application/json"), ("User-Agent", "txrecon/\(TxReconVersion.current)")]
        errorBuffer[0] = 0
        response.reset()
        _ = txr_curl_setopt_string(handle, CURLOPT_URL, url)
        let code: CURLcode
        do {
            code = try headers.withList(fields) { list in
                body.map { CurlEasy.post(handle, body: $0, headers: list, method: method) }
                    ?? CurlEasy.get(handle, headers: list)
            }
        } catch {
            return .unreachable("the request header \(error.name) holds a line break")
        }
        if response.bodyTooLong {
            return .malformed("the answer is larger than \(Self.answerLimit) bytes")
        }
        guard code == CURLE_OK else {
            let message = String(cString: errorBuffer)
            return .unreachable(redactor(for: token)
                .redact(message.isEmpty ? String(cString: curl_easy_strerror(code)) : message))
        }
        var status = 0
        _ = txr_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        guard accepting.contains(status) else {
            return .refused(AppStoreAPIError(status: status, body: response.bodyPrefix, retryAfter: response.retryAfter,
                                             redactor: redactor(for: token)))
        }
        // A 200's fields are printed too (the probe's token, a send
        // attempt's result) and may end up in an error message: an echo of
        // the token is taken out before anything reads the body.
        var body = response.bodyPrefix
        redactor(for: token).redact(&body)
        return .answered(body)
    }

    /// What keeps `token` out of what is printed and logged: a server that
    /// echoes the token, or its signature (the part that makes it usable),
    /// must not put it there; nor a proxy's password, which curl quotes.
    /// One per request: the token is new each time.
    private func redactor(for token: String) -> SecretRedactor {
        SecretRedactor([token, token.split(separator: ".").last.map(String.init) ?? ""] + proxySecrets)
    }

    /// `text` percent-encoded for a query value.
    private func escape(_ text: String) -> String? {
        guard let escaped = curl_easy_escape(handle, text, Int32(text.utf8.count)) else { return nil }
        defer { curl_free(escaped) }
        return String(cString: escaped)
    }

    /// Sets what stays the same for every request; the name of the first
    /// option curl refuses, or nil.
    private func configure() -> String? {
        // The base URL may be http only so that tests can point BaseURL= at 127.0.0.1.
        let codes = CurlEasy.setPostOptions(handle, timeoutMilliseconds: Self.timeoutMilliseconds,
                                            connectTimeoutMilliseconds: Self.connectTimeoutMilliseconds,
                                            errorBuffer: errorBuffer, response: response)
        return codes.first { $0.1 != CURLE_OK }?.0
    }
}
