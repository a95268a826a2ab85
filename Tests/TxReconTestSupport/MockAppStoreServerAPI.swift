// MockAppStoreServerAPI: Get Notification History on 127.0.0.1, for the
// sweep's tests, built on `LoopbackHTTPServer`.
//
// It checks every request the way Apple would and records what is wrong in
// `problems` (answering 401): the bearer token's header (alg ES256, kid, typ
// JWT), claims (iss, bid, aud appstoreconnect-v1, iat within a minute of the
// test's clock, exp after it and at most 60 minutes after iat), its ES256
// signature with the test key, and that no token is used twice; the body
// (startDate, endDate, optional onlyFailures, nothing else) and that a
// pagination token comes back with the very body it was issued for. It
// refuses a startDate beyond the history limit with 4000012, as Apple does.
// It serves its history entries sorted by date, `pageSize` per page,
// filtered by [startDate, endDate) and by onlyFailures, and plays scripted
// faults one request at a time: 429 with a Retry-After, 5xx, 5000001, 401,
// and an expired pagination token (4000017); `.usualAnswer` between them
// lets a page through.
//
// For `txrecon probe` it also serves Request a Test Notification (POST
// /inApps/v1/notifications/test) and Get Test Notification Status (GET
// …/test/{token}): once told where the notification URL is
// (`sendTestNotifications`), each request makes it POST the given TEST
// notification there, as Apple would, and record the attempt's result
// (SUCCESS for a 2xx, UNSUCCESSFUL_HTTP_RESPONSE_CODE for another status,
// NO_RESPONSE when nothing answered), which the status endpoint returns;
// unknown tokens get 404 with errorCode 4040008, as from Apple.
//
// For `txrecon reconcile` it serves Get All Subscription Statuses (GET
// /inApps/v1/subscriptions/{transactionId}): each customer's subscriptions
// (`setCustomer`), found by any of its ids, every transaction and renewal
// info signed anew with the test PKI on every answer (a new signedDate each
// time, as Apple signs), or forged when told; an unknown id gets 404 with
// errorCode 4040010. For `txrecon lookup` and `import`: Look Up Order ID
// (`setOrder`; an unknown order answers status 1), Get Transaction Info
// (any transaction of an order or a customer's history) and Get
// Transaction History v2 (`setHistory`: `historyPageSize` a page, paged by
// `revision`, checking that every page repeats the first one's query),
// signed afresh likewise. The scripted faults and refuseCredentials apply
// to all of them, and one status or history request can be held until the
// test releases it.
//
// For `txrecon answer`: Send Consumption Information v2 (PUT
// /inApps/v2/transactions/consumption/{id}, a ConsumptionRequest body,
// 202) and Finish Transaction (POST /inApps/v1/transactions/{id}/finish,
// 200), each recorded in `answers` with the time it arrived; the scripted
// faults apply, `.refused` among them.
import Dispatch
import Foundation
import Synchronization
import TxRecon

package final class MockAppStoreServerAPI: Sendable {
    /// One notification in the mock's history.
    package struct Entry: Sendable {
        /// When Apple first tried to send it: what the date range filters on.
        package var date: Int64
        package var signedPayload: String
        /// True when every send attempt failed: served to onlyFailures.
        package var failed: Bool

        package init(date: Int64, signedPayload: String, failed: Bool = false) {
            self.date = date
            self.signedPayload = signedPayload
            self.failed = failed
        }
    }

    /// An answer played instead of the next matching request's page.
    package enum Fault: Sendable {
        /// 429, errorCode 4290000, with this Retry-After.
        case rateLimited(retryAfter: String)
        /// This status (5xx) with an empty body.
        case serverError(Int)
        /// 500, errorCode 5000001.
        case retryableError
        /// 400, errorCode 4000017, for the next request that carries a
        /// pagination token.
        case expiredToken
        /// 200 with this body: what a wrong BaseURL=, a captive proxy or a
        /// changed API would answer.
        case success(body: String)
        /// This status (4xx) with Apple's errorCode.
        case refused(Int, errorCode: Int64)
        /// No answer at all, until the client goes away.
        case hang
        /// No fault: the request gets its usual answer (to play faults
        /// between pages, as Apple's rate limit does).
        case usualAnswer
    }

    /// One answer `txrecon answer` sent, as taken.
    package struct Answer: Sendable {
        /// `consumption` or `finish`.
        package var kind: String
        package var transactionId: String
        package var body: [UInt8]
        /// The test's clock when it arrived, ms since 1970.
        package var at: Int64
        /// The status answered.
        package var status: Int
    }

    /// One history request as served.
    package struct Served: Sendable {
        package var startDate: Int64
        package var endDate: Int64
        package var onlyFailures: Bool
        package var paginationToken: String?
        package var status: Int
    }

    /// One subscription in a Get All Subscription Statuses answer.
    package struct Subscription: Sendable {
        package var originalTransactionId: String
        /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        package var status: Int64
        /// The latest transaction's payload; its signedDate is replaced on
        /// every answer.
        package var transaction: JSONValue
        /// The renewal info's payload, signed afresh likewise.
        package var renewalInfo: JSONValue?
        /// Serve the transaction with an altered payload under the genuine
        /// signature (invalid-signature).
        package var forged: Bool

        package init(originalTransactionId: String, status: Int64 = 1, transaction: JSONValue,
                     renewalInfo: JSONValue? = nil, forged: Bool = false) {
            self.originalTransactionId = originalTransactionId
            self.status = status
            self.transaction = transaction
            self.renewalInfo = renewalInfo
            self.forged = forged
        }
    }

    /// The App Store Connect identity requests must be signed for.
    package struct Identity: Sendable {
        package var issuerID = "57246542-96fe-1a63-e053-0824d011072a"
        package var keyID = "2X9R4HXF34"
        package var bundleID = "com.example.app"
        package var key: TestSigningKey

        package init(key: TestSigningKey) { self.key = key }
    }

    private struct State {
        var faults: [Fault] = []
        var refuseEverything = false
        var echoesCredentials = false
        var echoesCredentialsInTestTokens = false
        var problems: [String] = []
        var served: [Served] = []
        var seenTokens: Set<String> = []
        /// Pagination token → the body it was issued for and the next offset.
        var pages: [String: (body: [UInt8], offset: Int)] = [:]
        var nextToken = 1
        /// Where test notifications go, and which one.
        var notificationURL: (port: UInt16, path: String, signedPayload: String)?
        /// Test notification token → its send attempts so far.
        var tests: [String: [(date: Int64, result: String)]] = [:]
        /// Any id of a customer → the customer's index in `customers`.
        var customerIndex: [String: Int] = [:]
        var customers: [[Subscription]] = []
        /// Transaction ids of the status requests, in arrival order.
        var statusRequests: [String] = []
        /// The status request (1 for the first) held until `releaseHeldRequest`.
        var holdRequest: Int?
        /// How many answers were signed: each gets a later signedDate.
        var signings: Int64 = 0
        /// Order id → its transactions' payloads.
        var orders: [String: [JSONValue]] = [:]
        /// Any id of a customer → the customer's history, oldest first.
        var histories: [String: [JSONValue]] = [:]
        /// Revision → the customer's id and the offset of the next page.
        var revisions: [String: (id: String, offset: Int)] = [:]
        /// Every history request: the id and the revision it carried.
        var historyRequests: [(id: String, revision: String?)] = []
        /// Every consumption or finish request, in arrival order.
        var answers: [Answer] = []
    }

    package let identity: Identity
    private let entries: [Entry]
    private let pageSize: Int
    private let historyLimit: Int64
    private let now: @Sendable () -> Int64
    private let state = Mutex(State())
    private let server: LoopbackHTTPServer
    private let held = DispatchSemaphore(value: 0)
    private let holding = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - historyDays: how far back startDate may reach (180 production, 30 sandbox).
    ///   - now: the test's wall clock in UNIX milliseconds, for token and
    ///     history-limit checks.
    package init(identity: Identity, entries: [Entry], pageSize: Int = 3, historyDays: Int64 = 180,
                now: @escaping @Sendable () -> Int64) throws {
        self.identity = identity
        self.entries = entries.sorted { $0.date < $1.date }
        self.pageSize = pageSize
        historyLimit = historyDays * 86_400_000
        self.now = now
        server = try LoopbackHTTPServer()
        server.setHandler { [weak self] request in
            self?.answer(request) ?? .status(503)
        }
    }

    deinit { server.stop() }

    /// The base URL, for BaseURL=.
    package var url: String { "http://127.0.0.1:\(server.port)" }

    /// A [Sweep] section for this mock, Sandbox, with the key at `privateKeyFile`.
    package func sweepSection(privateKeyFile: String) -> String {
        """
        [Sweep]
        Environment=Sandbox
        BundleID=\(identity.bundleID)
        IssuerID=\(identity.issuerID)
        KeyID=\(identity.keyID)
        PrivateKeyFile=\(privateKeyFile)
        BaseURL=\(url)
        """
    }

    /// Plays `faults`, in order, one per matching request.
    package func inject(_ faults: Fault...) {
        state.withLock { $0.faults += faults }
    }

    /// Answers 401 to every request from now on.
    package func refuseCredentials() {
        state.withLock { $0.refuseEverything = true }
    }

    /// Answers 403 to every request from now on, with an errorMessage that
    /// repeats the token's signature and then the whole Authorization
    /// header, as a careless server might.
    package func refuseRequestsEchoingCredentials() {
        state.withLock {
            $0.refuseEverything = true
            $0.echoesCredentials = true
        }
    }

    /// Names each test notification it issues after the request's token
    /// signature (`test-N-SIGNATURE`), as a careless server might: a 200
    /// that echoes the credential.
    package func echoCredentialsInTestTokens() {
        state.withLock { $0.echoesCredentialsInTestTokens = true }
    }

    /// Every bearer token requests carried, in no order.
    package var tokensSeen: [String] {
        state.withLock { Array($0.seenTokens) }
    }

    /// Makes each Request a Test Notification POST `signedPayload` (as
    /// `{"signedPayload": …}`) to 127.0.0.1:`port``path`.
    package func sendTestNotifications(signedPayload: String, toPort port: UInt16,
                                       path: String = "/appstore/notifications") {
        state.withLock { $0.notificationURL = (port, path, signedPayload) }
    }

    /// The test notification tokens issued, with their attempts' results.
    package var testAttempts: [String: [String]] {
        state.withLock { $0.tests.mapValues { $0.map(\.result) } }
    }

    /// Serves `subscriptions` for each of `ids` (an originalTransactionId,
    /// a transaction id, an appTransactionId): one customer.
    package func setCustomer(_ ids: [String], subscriptions: [Subscription]) {
        state.withLock { state in
            let index = ids.compactMap { state.customerIndex[$0] }.first ?? state.customers.count
            if index == state.customers.count { state.customers.append([]) }
            state.customers[index] = subscriptions
            for id in ids { state.customerIndex[id] = index }
        }
    }

    /// Serves `transactions` for the order id `orderID`.
    package func setOrder(_ orderID: String, transactions: [JSONValue]) {
        state.withLock { $0.orders[orderID] = transactions }
    }

    /// Serves `transactions` (oldest first) as the history of each of `ids`.
    package func setHistory(_ ids: [String], transactions: [JSONValue]) {
        state.withLock { state in
            for id in ids { state.histories[id] = transactions }
        }
    }

    /// Every history request: the id asked for and the revision it carried.
    package var historyRequests: [(id: String, revision: String?)] { state.withLock { $0.historyRequests } }

    /// History answers hold this many transactions a page.
    package static let historyPageSize = 2

    /// The transaction ids status requests were made for, in arrival order.
    package var statusRequests: [String] { state.withLock { $0.statusRequests } }

    /// Holds the `number`th status request (1 for the first) unanswered
    /// until `releaseHeldRequest`; `waitUntilHolding` returns once it arrived.
    package func holdStatusRequest(_ number: Int) {
        state.withLock { $0.holdRequest = number }
    }

    package func waitUntilHolding(timeout: Duration) -> Bool {
        holding.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds * 1000))) == .success
    }

    package func releaseHeldRequest() { held.signal() }

    /// What the mock found wrong with the requests, empty when nothing.
    package var problems: [String] { state.withLock { $0.problems } }

    /// Every history request, in arrival order.
    package var served: [Served] { state.withLock { $0.served } }

    /// Every consumption or finish request, in arrival order.
    package var answers: [Answer] { state.withLock { $0.answers } }

    private func answer(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply {
        let consumption = "/inApps/v2/transactions/consumption/"
        if request.path.hasPrefix(consumption) {
            return answerOutbox(request, kind: "consumption", id: String(request.path.dropFirst(consumption.count)))
        }
        if request.path.hasPrefix("/inApps/v1/transactions/"), request.path.hasSuffix("/finish") {
            let id = request.path.dropFirst("/inApps/v1/transactions/".count).dropLast("/finish".count)
            return answerOutbox(request, kind: "finish", id: String(id))
        }
        for (prefix, kind) in [("/inApps/v1/lookup/", "lookup"), ("/inApps/v1/transactions/", "transaction"),
                               ("/inApps/v2/history/", "history")] where request.path.hasPrefix(prefix) {
            return answerTransactions(request, kind: kind, target: String(request.path.dropFirst(prefix.count)))
        }
        let statusPath = "/inApps/v1/subscriptions/"
        if request.path.hasPrefix(statusPath) {
            return answerStatus(request, transactionId: String(request.path.dropFirst(statusPath.count)))
        }
        let testPath = "/inApps/v1/notifications/test"
        if request.path == testPath || request.path.hasPrefix(testPath + "/") {
            return answerTest(request, token: request.path == testPath ? nil : String(request.path.dropFirst(testPath.count + 1)))
        }
        let path = "/inApps/v1/notifications/history"
        var token: String?
        if request.path != path {
            let prefix = path + "?paginationToken="
            guard request.path.hasPrefix(prefix) else { return problem("unexpected target \(request.path)", 404) }
            token = String(request.path.dropFirst(prefix.count)).removingPercentEncoding
        }
        guard request.method == "POST" else { return problem("method \(request.method)", 405) }
        if let trouble = checkToken(request.header("Authorization")) { return problem(trouble, 401) }
        if request.header("Content-Type") != "application/json" { return problem("Content-Type is not JSON", 400) }
        guard let body = try? JSONValue.parse(request.body), let members = body.objectValue,
              let startDate = body["startDate"]?.int64Value, let endDate = body["endDate"]?.int64Value,
              members.allSatisfy({ ["startDate", "endDate", "onlyFailures"].contains($0.0) })
        else { return problem("body \(request.bodyText) is not a NotificationHistoryRequest", 400) }
        let onlyFailures = body["onlyFailures"]?.boolValue ?? false

        return state.withLock { state -> LoopbackHTTPServer.Reply in
            var served = Served(startDate: startDate, endDate: endDate, onlyFailures: onlyFailures,
                                paginationToken: token, status: 200)
            defer { state.served.append(served) }
            func error(_ status: Int, _ code: Int64?, _ headers: [(name: String, value: String)] = []) -> LoopbackHTTPServer.Reply {
                served.status = status
                let text = code.map { #"{"errorCode":\#($0),"errorMessage":"mock"}"# } ?? ""
                return .status(status, headers: headers, body: text)
            }
            if state.refuseEverything {
                guard state.echoesCredentials, let authorization = request.header("Authorization") else {
                    return error(401, nil)
                }
                served.status = 403
                let signature = authorization.split(separator: ".").last.map(String.init) ?? ""
                let echo = JSONValue.object([("errorCode", .number("4030000")),
                                             ("errorMessage", .string("signature \(signature) refused for \(authorization)"))])
                return .status(403, body: echo.serializedString)
            }
            if startDate >= endDate {
                state.problems.append("startDate \(startDate) is not before endDate \(endDate)")
                return error(400, 4_000_010)
            }
            if startDate < now() - historyLimit { return error(400, 4_000_012) }
            if let fault = state.faults.first, token != nil || !Self.needsToken(fault) {
                state.faults.removeFirst()
                if let reply = Self.reply(to: fault) {
                    if case let .respond(status, _, _) = reply { served.status = status }
                    return reply
                }
            }
            var offset = 0
            if let token {
                guard let page = state.pages[token] else { return error(400, 4_000_014) }
                guard page.body == request.body else {
                    state.problems.append("pagination token \(token) came back with another body")
                    return error(400, 4_000_014)
                }
                offset = page.offset
            }
            let matching = entries.filter { $0.date >= startDate && $0.date < endDate && (!onlyFailures || $0.failed) }
            let page = matching.dropFirst(offset).prefix(pageSize)
            let hasMore = offset + page.count < matching.count
            let next = "page-\(state.nextToken)"
            state.nextToken += 1
            state.pages[next] = (request.body, offset + page.count)
            let history: [JSONValue] = page.map { entry in
                .object([
                    ("sendAttempts", .array([.object([
                        ("attemptDate", .integer(entry.date)),
                        ("sendAttemptResult", .string(entry.failed ? "TIMED_OUT" : "SUCCESS")),
                    ])])),
                    ("signedPayload", .string(entry.signedPayload)),
                ])
            }
            let answer = JSONValue.object([
                ("notificationHistory", .array(history)), ("hasMore", .bool(hasMore)), ("paginationToken", .string(next)),
            ])
            return .status(200, headers: [("Content-Type", "application/json")], body: answer.serializedString)
        }
    }

    /// Request a Test Notification (no `token`) or Get Test Notification Status.
    private func answerTest(_ request: LoopbackHTTPServer.Request, token: String?) -> LoopbackHTTPServer.Reply {
        if let trouble = checkToken(request.header("Authorization")) { return problem(trouble, 401) }
        let json = [("Content-Type", "application/json")]
        guard let token else {
            guard request.method == "POST" else { return problem("method \(request.method) for the test request", 405) }
            let issued = state.withLock { state -> (String, (port: UInt16, path: String, signedPayload: String))? in
                if state.refuseEverything { return nil }
                guard let target = state.notificationURL else { return nil }
                var token = "test-\(state.nextToken)"
                state.nextToken += 1
                if state.echoesCredentialsInTestTokens,
                   let signature = request.header("Authorization")?.split(separator: ".").last {
                    token += "-" + signature
                }
                state.tests[token] = []
                return (token, target)
            }
            guard let (token, target) = issued else {
                let refused = state.withLock { $0.refuseEverything }
                return refused ? .status(401) : problem("a test notification was requested, but the test never "
                                                        + "called sendTestNotifications", 500)
            }
            // As Apple: the request is answered at once, the notification follows.
            let body = JSONValue.object([("signedPayload", .string(target.signedPayload))]).serialized
            Task { [self] in
                var outcome = "NO_RESPONSE"
                if let reply = try? await LoopbackHTTPClient.send(port: target.port, path: target.path, body: body) {
                    outcome = (200..<300).contains(reply.status) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
                }
                state.withLock { $0.tests[token]?.append((now(), outcome)) }
            }
            return .status(200, headers: json, body: #"{"testNotificationToken":"\#(token)"}"#)
        }
        guard request.method == "GET" else { return problem("method \(request.method) for the test status", 405) }
        return state.withLock { state -> LoopbackHTTPServer.Reply in
            guard let attempts = state.tests[token], let payload = state.notificationURL?.signedPayload else {
                return .status(404, headers: json, body: #"{"errorCode":4040008,"errorMessage":"mock"}"#)
            }
            let answer = JSONValue.object([
                ("signedPayload", .string(payload)),
                ("sendAttempts", .array(attempts.map {
                    .object([("attemptDate", .integer($0.date)), ("sendAttemptResult", .string($0.result))])
                })),
            ])
            return .status(200, headers: json, body: answer.serializedString)
        }
    }

    /// Counts a status or history request (`name`) and, when it is the one
    /// to hold, holds it until the test releases it.
    private func arrived(_ name: String) {
        let hold = state.withLock { state -> Bool in
            state.statusRequests.append(name)
            return state.holdRequest == state.statusRequests.count
        }
        if hold {
            holding.signal()
            held.wait()
        }
    }

    /// Get All Subscription Statuses.
    private func answerStatus(_ request: LoopbackHTTPServer.Request, transactionId: String) -> LoopbackHTTPServer.Reply {
        guard request.method == "GET" else { return problem("method \(request.method) for a status", 405) }
        if let trouble = checkToken(request.header("Authorization")) { return problem(trouble, 401) }
        arrived(transactionId)
        let json = [("Content-Type", "application/json")]
        return state.withLock { state -> LoopbackHTTPServer.Reply in
            func error(_ status: Int, _ code: Int64?) -> LoopbackHTTPServer.Reply { Self.error(status, code) }
            if let refusal = Self.refusalOrFault(&state) { return refusal }
            guard let index = state.customerIndex[transactionId] else { return error(404, 4_040_010) }
            var groups: [JSONValue] = []
            for subscription in state.customers[index] {
                state.signings += 1
                let signedDate = JSONValue.integer(TestPKI.insideLeafValidity + state.signings * 1000)
                var transaction = TestPKI.sign(payload: subscription.transaction.merging([("signedDate", signedDate)]))
                if subscription.forged {
                    let parts = transaction.split(separator: ".").map(String.init)
                    let altered = subscription.transaction.merging([("signedDate", signedDate),
                                                                    ("expiresDate", .integer(4_000_000_000_000))])
                    transaction = parts[0] + "." + TestJWS.base64URL(altered.serialized) + "." + parts[2]
                }
                var entry: [(String, JSONValue)] = [
                    ("originalTransactionId", .string(subscription.originalTransactionId)),
                    ("status", .integer(subscription.status)),
                    ("signedTransactionInfo", .string(transaction)),
                ]
                if let renewal = subscription.renewalInfo {
                    entry.append(("signedRenewalInfo",
                                  .string(TestPKI.sign(payload: renewal.merging([("signedDate", signedDate)])))))
                }
                groups.append(.object([("subscriptionGroupIdentifier", .string("group-\(groups.count + 1)")),
                                       ("lastTransactions", .array([.object(entry)]))]))
            }
            let answer = JSONValue.object([("environment", .string("Sandbox")),
                                           ("bundleId", .string(identity.bundleID)),
                                           ("appAppleId", .integer(1_234_567_890)), ("data", .array(groups))])
            return .status(200, headers: json, body: answer.serializedString)
        }
    }

    /// Look Up Order ID, Get Transaction Info, Get Transaction History v2.
    private func answerTransactions(_ request: LoopbackHTTPServer.Request, kind: String,
                                    target: String) -> LoopbackHTTPServer.Reply {
        guard request.method == "GET" else { return problem("method \(request.method) for \(kind)", 405) }
        if let trouble = checkToken(request.header("Authorization")) { return problem(trouble, 401) }
        var id = target
        var query: [String: String] = [:]
        if let mark = target.firstIndex(of: "?") {
            id = String(target[..<mark])
            for pair in target[target.index(after: mark)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { query[parts[0]] = parts[1].removingPercentEncoding }
            }
        }
        if kind == "history" {
            state.withLock { $0.historyRequests.append((id, query["revision"])) }
            arrived("history:" + id)
        }
        let json = [("Content-Type", "application/json")]
        return state.withLock { state -> LoopbackHTTPServer.Reply in
            func error(_ status: Int, _ code: Int64?) -> LoopbackHTTPServer.Reply { Self.error(status, code) }
            if let refusal = Self.refusalOrFault(&state) { return refusal }
            func sign(_ payload: JSONValue) -> JSONValue {
                state.signings += 1
                return .string(TestPKI.sign(payload: payload.merging([
                    ("signedDate", .integer(TestPKI.insideLeafValidity + state.signings * 1000))])))
            }
            switch kind {
            case "lookup":
                guard let transactions = state.orders[id] else {
                    return .status(200, headers: json, body: #"{"status":1,"signedTransactions":[]}"#)
                }
                let answer = JSONValue.object([("status", .integer(0)),
                                               ("signedTransactions", .array(transactions.map(sign)))])
                return .status(200, headers: json, body: answer.serializedString)
            case "transaction":
                let all = state.orders.values.flatMap { $0 } + state.histories.values.flatMap { $0 }
                guard let payload = all.first(where: { $0["transactionId"]?.stringValue == id }) else {
                    return error(404, 4_040_010)
                }
                let answer = JSONValue.object([("signedTransactionInfo", sign(payload))])
                return .status(200, headers: json, body: answer.serializedString)
            default:
                guard let history = state.histories[id] else { return error(404, 4_040_010) }
                var offset = 0
                if let revision = query["revision"] {
                    guard let position = state.revisions[revision], position.id == id else {
                        state.problems.append("revision \(revision) came back for \(id)")
                        return error(400, 4_000_005)
                    }
                    offset = position.offset
                }
                if query["sort"] != "ASCENDING" { state.problems.append("history asked without sort=ASCENDING") }
                let page = history.dropFirst(offset).prefix(Self.historyPageSize)
                let next = "rev-\(state.nextToken)"
                state.nextToken += 1
                state.revisions[next] = (id, offset + page.count)
                let answer = JSONValue.object([
                    ("revision", .string(next)), ("hasMore", .bool(offset + page.count < history.count)),
                    ("bundleId", .string(identity.bundleID)), ("environment", .string("Sandbox")),
                    ("signedTransactions", .array(page.map(sign))),
                ])
                return .status(200, headers: json, body: answer.serializedString)
            }
        }
    }

    /// An error answer: `status`, with Apple's body for `code`.
    private static func error(_ status: Int, _ code: Int64?,
                              _ headers: [(name: String, value: String)] = []) -> LoopbackHTTPServer.Reply {
        let text = code.map { #"{"errorCode":\#($0),"errorMessage":"mock"}"# } ?? ""
        return .status(status, headers: headers, body: text)
    }

    /// For the endpoints besides the history: 401 while refusing
    /// everything, else the next scripted fault that needs no pagination
    /// token, played once; nil to answer normally.
    /// Send Consumption Information (PUT, a ConsumptionRequest, 202) or
    /// Finish Transaction (POST, 200).
    private func answerOutbox(_ request: LoopbackHTTPServer.Request, kind: String,
                              id: String) -> LoopbackHTTPServer.Reply {
        let method = kind == "consumption" ? "PUT" : "POST"
        guard request.method == method else { return problem("method \(request.method) for \(kind)", 405) }
        if let trouble = checkToken(request.header("Authorization")) { return problem(trouble, 401) }
        if kind == "consumption" {
            guard let body = try? JSONValue.parse(request.body), body["customerConsented"]?.boolValue != nil,
                  body["deliveryStatus"]?.stringValue != nil else {
                return problem("consumption body \(request.bodyText) is not a ConsumptionRequest", 400)
            }
        }
        return state.withLock { state -> LoopbackHTTPServer.Reply in
            let reply = Self.refusalOrFault(&state) ?? .status(kind == "consumption" ? 202 : 200)
            var status = 0
            if case let .respond(code, _, _) = reply { status = code }
            state.answers.append(Answer(kind: kind, transactionId: id, body: request.body, at: now(), status: status))
            return reply
        }
    }

    private static func refusalOrFault(_ state: inout State) -> LoopbackHTTPServer.Reply? {
        if state.refuseEverything { return error(401, nil) }
        guard let fault = state.faults.first, !needsToken(fault) else { return nil }
        state.faults.removeFirst()
        return reply(to: fault)
    }

    /// What `fault` answers; nil: the usual answer.
    private static func reply(to fault: Fault) -> LoopbackHTTPServer.Reply? {
        switch fault {
        case .usualAnswer: return nil
        case .rateLimited(let retryAfter): return error(429, 4_290_000, [("Retry-After", retryAfter)])
        case .serverError(let status): return error(status, nil)
        case .retryableError: return error(500, 5_000_001)
        case .expiredToken: return error(400, 4_000_017)
        case .success(let body): return .status(200, headers: [("Content-Type", "application/json")], body: body)
        case let .refused(status, code): return error(status, code)
        case .hang: return .hang
        }
    }

    private static func needsToken(_ fault: Fault) -> Bool {
        if case .expiredToken = fault { return true }
        return false
    }

    private func problem(_ text: String, _ status: Int) -> LoopbackHTTPServer.Reply {
        state.withLock { $0.problems.append(text) }
        return .status(status)
    }

    /// What is wrong with the Authorization header, or nil.
    private func checkToken(_ authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        let token = String(authorization.dropFirst("Bearer ".count))
        let fresh = state.withLock { $0.seenTokens.insert(token).inserted }
        guard fresh else { return "a token was used twice" }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claimBytes = Self.base64URL(parts[1]),
              let signature = Self.base64URL(parts[2]),
              let header = try? JSONValue.parse(headerBytes), let claims = try? JSONValue.parse(claimBytes)
        else { return "the token is not a compact JWS of JSON" }
        guard header == .object([("alg", .string("ES256")), ("kid", .string(identity.keyID)), ("typ", .string("JWT"))])
        else { return "header \(header.serializedString)" }
        guard claims["iss"] == .string(identity.issuerID), claims["bid"] == .string(identity.bundleID),
              claims["aud"] == .string("appstoreconnect-v1"),
              let issuedAt = claims["iat"]?.int64Value, let expires = claims["exp"]?.int64Value,
              claims.objectValue?.count == 5
        else { return "claims \(claims.serializedString)" }
        let seconds = now() / 1000
        guard abs(issuedAt - seconds) <= 60, expires > seconds, expires - issuedAt <= 3600 else {
            return "iat \(issuedAt), exp \(expires) at \(seconds)"
        }
        guard identity.key.verifies(signature: signature, of: Array((parts[0] + "." + parts[1]).utf8)) else {
            return "the signature does not verify with the test key"
        }
        return nil
    }

    private static func base64URL(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { [UInt8]($0) }
    }
}
