// TransactionAnswers: the answers of the App Store Server API endpoints
// that hand out signed transactions, as `txrecon lookup` and `import` read
// them:
//
//   Look Up Order ID          GET /inApps/v1/lookup/{orderId}
//     {"status": 0|1, "signedTransactions": ["<JWS>", …]}   1: Apple knows no such order
//   Get Transaction Info      GET /inApps/v1/transactions/{transactionId}
//     {"signedTransactionInfo": "<JWS>"}
//   Get Transaction History   GET /inApps/v2/history/{transactionId}?revision=…
//     {"revision": "…", "hasMore": true|false, "signedTransactions": ["<JWS>", …], …}
//
// Nothing here is trusted: each signed transaction is verified afterwards
// (SnapshotJudge). Pure; a body that is not the shape is an
// `APIReadFailure` naming the member at fault.

/// Look Up Order ID's answer.
struct OrderLookup: Sendable, Equatable {
    /// Apple's `status`: 0 valid, 1 invalid (no such order).
    var status: Int64
    var signedTransactions: [String]

    init(json bytes: [UInt8]) throws(APIReadFailure) {
        guard let value = try? JSONValue.parse(bytes), value.objectValue != nil else {
            throw APIReadFailure("the answer is not a JSON object")
        }
        guard let status = value["status"]?.int64Value else { throw APIReadFailure("it has no status number") }
        self.status = status
        signedTransactions = try Self.strings(value["signedTransactions"], name: "signedTransactions",
                                              required: status == 0)
    }

    /// A member that is an array of JWS strings (nil and not required: none).
    static func strings(_ value: JSONValue?, name: String, required: Bool) throws(APIReadFailure) -> [String] {
        guard let value else {
            if required { throw APIReadFailure("it has no \(name)") }
            return []
        }
        guard let array = value.arrayValue else { throw APIReadFailure("\(name) is not an array") }
        var strings: [String] = []
        for (index, element) in array.enumerated() {
            guard let text = element.stringValue, !text.isEmpty else {
                throw APIReadFailure("\(name)[\(index)] is not a string")
            }
            strings.append(text)
        }
        return strings
    }
}

/// One page of Get Transaction History (v2).
struct TransactionHistoryPage: Sendable, Equatable {
    var signedTransactions: [String]
    var hasMore: Bool
    /// Where the next page starts: the `revision` query parameter.
    var revision: String?

    init(json bytes: [UInt8]) throws(APIReadFailure) {
        guard let value = try? JSONValue.parse(bytes), value.objectValue != nil else {
            throw APIReadFailure("the answer is not a JSON object")
        }
        // Without hasMore a 200 is no history page (a wrong BaseURL=, a
        // proxy); taken as a last page it would end a customer's import early.
        guard case .bool(let hasMore)? = value["hasMore"] else { throw APIReadFailure("it has no hasMore boolean") }
        self.hasMore = hasMore
        revision = value["revision"]?.stringValue
        if hasMore && (revision ?? "").isEmpty { throw APIReadFailure("hasMore is true but there is no revision") }
        signedTransactions = try OrderLookup.strings(value["signedTransactions"], name: "signedTransactions",
                                                     required: false)
    }
}
