// SubscriptionStatuses: the answer of Get All Subscription Statuses (App
// Store Server API, GET /inApps/v1/subscriptions/{transactionId}), as
// `txrecon reconcile` reads it:
//
//   {"environment": "...", "bundleId": "...", "appAppleId": ...,
//    "data": [{"subscriptionGroupIdentifier": "...",
//              "lastTransactions": [{"originalTransactionId": "...", "status": 1,
//                                    "signedTransactionInfo": "<JWS>",
//                                    "signedRenewalInfo": "<JWS>"}]}]}
//
// One answer holds every subscription group of the customer the
// transaction belongs to, each with its latest transaction per
// subscription. Nothing here is trusted: the signed strings are verified
// afterwards as intake verifies them. Pure; a body that is not this shape
// is an `APIReadFailure` naming the member at fault.

/// The latest transaction of one subscription, as Apple signed it.
struct SubscriptionSnapshot: Sendable, Equatable {
    /// From the unsigned part of the answer, for messages only.
    var originalTransactionId: String
    var signedTransactionInfo: String
    var signedRenewalInfo: String?

    /// What is dropped into new/ when it changed: format 3, as an app uploads it.
    var drop: [UInt8] {
        var members: [(String, JSONValue)] = [("signedTransactionInfo", .string(signedTransactionInfo))]
        if let signedRenewalInfo { members.append(("signedRenewalInfo", .string(signedRenewalInfo))) }
        return JSONValue.object(members).serialized
    }
}

/// Every subscription of one customer.
struct SubscriptionStatuses: Sendable, Equatable {
    var subscriptions: [SubscriptionSnapshot]

    /// Reads a 200 answer's body.
    init(json bytes: [UInt8]) throws(APIReadFailure) {
        guard let value = try? JSONValue.parse(bytes), value.objectValue != nil else {
            throw APIReadFailure("the answer is not a JSON object")
        }
        // `data` is in every answer Apple documents; without it a 200 is
        // not a status answer (a wrong BaseURL=, a proxy), and read as "no
        // subscriptions" it would hide every change.
        guard let groups = value["data"]?.arrayValue else {
            throw APIReadFailure(value["data"] == nil ? "it has no data" : "data is not an array")
        }
        var subscriptions: [SubscriptionSnapshot] = []
        for (groupIndex, group) in groups.enumerated() {
            guard let last = group["lastTransactions"]?.arrayValue else {
                throw APIReadFailure("data[\(groupIndex)] has no lastTransactions array")
            }
            for (index, entry) in last.enumerated() {
                let place = "data[\(groupIndex)].lastTransactions[\(index)]"
                guard let transaction = entry["signedTransactionInfo"]?.stringValue, !transaction.isEmpty else {
                    throw APIReadFailure("\(place) has no signedTransactionInfo string")
                }
                let renewal = entry["signedRenewalInfo"]?.stringValue
                subscriptions.append(SubscriptionSnapshot(
                    originalTransactionId: entry["originalTransactionId"]?.stringValue ?? "(not given)",
                    signedTransactionInfo: transaction,
                    signedRenewalInfo: renewal?.isEmpty == true ? nil : renewal))
            }
        }
        self.subscriptions = subscriptions
    }
}
