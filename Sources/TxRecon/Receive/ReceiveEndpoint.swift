// ReceiveEndpoint: the paths `txrecon receive` serves, part of the
// operator's contract (docs/receive.md "txrecon receive"), and what each takes.
//
//   POST /appstore/notifications   Apple's App Store Server Notifications V2 body (format 2)
//   POST /appstore/notifications/NAME
//                                  the same, for the app NAME (apps/NAME.conf, or main): a
//                                  label to count each app's notifications apart by; the
//                                  signed bundleId alone decides the app
//   POST /appstore/transactions    an app's upload: formats 1, 3 and 6; behind UploadTokenFile=
//   POST /envelopes                the generic envelope (format 5), with AcceptEnvelopes=yes;
//                                  behind UploadTokenFile=
//   GET  /healthz                  200 while one more notification would be taken, else 503 with the reason

enum ReceiveEndpoint: String, CaseIterable, Sendable {
    case notifications = "/appstore/notifications"
    case transactions = "/appstore/transactions"
    case envelopes = "/envelopes"
    case health = "/healthz"

    var method: String { self == .health ? "GET" : "POST" }

    /// Whether the upload token guards it: the business's own API, which an
    /// app calls; Apple's notifications carry Apple's signature instead.
    var needsUploadToken: Bool { self == .transactions || self == .envelopes }

    /// The endpoint for `head`, or the answer that refuses it: 404 for a
    /// path served by no endpoint (or /envelopes with AcceptEnvelopes=no),
    /// 405 for another method.
    /// `apps`: the names `/appstore/notifications/NAME` may carry.
    static func route(_ head: HTTPRequestHead, acceptEnvelopes: Bool,
                      apps: [String] = []) -> Result<ReceiveEndpoint, ReceiveRefusal> {
        let path = appPath(head.path, apps: apps) == nil ? head.path : ReceiveEndpoint.notifications.rawValue
        guard let endpoint = ReceiveEndpoint(rawValue: path), endpoint != .envelopes || acceptEnvelopes else {
            // The citation on one line: DocumentationSectionTests finds it there.
            return .failure(ReceiveRefusal(404, "not-found",
                                           "nothing is served at this path; see docs/receive.md \"Endpoints\""))
        }
        guard head.method == endpoint.method else {
            return .failure(ReceiveRefusal(405, "method-not-allowed", "\(endpoint.rawValue) takes \(endpoint.method)",
                                           headers: [("Allow", endpoint.method)]))
        }
        return .success(endpoint)
    }

    /// The app a per-app notification path names (`/appstore/notifications/NAME`
    /// for a NAME of `apps`), nil for any other path.
    static func appPath(_ path: String, apps: [String]) -> String? {
        let prefix = ReceiveEndpoint.notifications.rawValue + "/"
        guard path.hasPrefix(prefix) else { return nil }
        let name = String(path.dropFirst(prefix.count))
        return apps.contains(name) ? name : nil
    }

    /// Whether `item` belongs at this endpoint: Apple's notifications at
    /// the notifications endpoint only, an app's transactions and receipts
    /// at the transactions endpoint, envelopes at theirs.
    func takes(_ kind: ItemKind) -> Bool {
        switch self {
        case .notifications: kind == .notification
        case .transactions: kind == .transaction || kind == .receipt
        case .envelopes: kind == .envelope
        case .health: false
        }
    }
}

/// A request refused, before or after its body: status, the stable code,
/// a sentence for the client's log.
struct ReceiveRefusal: Error, Sendable, Equatable {
    var status: Int
    var code: String
    var detail: String
    var headers: [(name: String, value: String)] = []

    init(_ status: Int, _ code: String, _ detail: String, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers
    }

    static func == (lhs: ReceiveRefusal, rhs: ReceiveRefusal) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.detail == rhs.detail
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    /// Whether a client can bring this refusal about as often as it likes
    /// without sending a body (a route, the token, the rate, a head
    /// RequestSyntax or libmicrohttpd refuses, a length; and the budget's
    /// 503): Reception.report logs these at most once a second per client
    /// and status, so that a flood of them cannot flood the journal.
    var isRepeatable: Bool {
        [401, 404, 405, 413, 429].contains(status) || code == HTTPServer.busy || RequestSyntax.codes.contains(code)
            || HTTPServer.libraryCodes.contains(code)
    }

    var answer: HTTPAnswer {
        HTTPAnswer.json(status, ["error": code, "detail": detail], headers: headers)
    }
}
