// PurchaseToFinish: which confirmed items are a purchase to finish at Apple
// (Finish Transaction) with `FinishTransactions=yes`, decided on verified
// fields only, as `[Match]` decides:
//
//   - a signed transaction (an app's upload, format 1 or 3) or a
//     notification of a purchase (SUBSCRIBED, DID_RENEW, ONE_TIME_CHARGE)
//     carrying one;
//   - in Production or Sandbox (Apple's API knows no other environment);
//   - not revoked (a refund is never a purchase to finish);
//   - whose transactionReason is PURCHASE or RENEWAL (or absent);
//   - signed by Apple within `signedWithin` of its purchaseDate: what a
//     purchase or a renewal carries when it happens. History brought in
//     later (`txrecon import`, `reconcile`, `lookup`) is signed by Apple
//     when asked, long after the purchase, and the app finished those
//     purchases itself when they happened; so is a transaction StoreKit
//     hands an app again from its history.
//
// Everything else is never finished: refunds and revocations, consumption
// requests and every other notification type, receipts (StoreKit 1 apps
// finish their own transactions), envelopes. Pure.

package enum PurchaseToFinish {
    /// How long after its purchaseDate a purchase may have been signed: 3 days.
    package static let signedWithin: Duration = .seconds(3 * 86_400)
    /// The notification types that carry a new purchase or a renewal.
    package static let notificationTypes: Set<String> = ["SUBSCRIBED", "DID_RENEW", "ONE_TIME_CHARGE"]
    /// The transactionReason values of a purchase.
    static let reasons: Set<String> = ["PURCHASE", "RENEWAL"]

    /// The transaction of `item` to finish, or nil when it is not a purchase to finish.
    package static func transaction(of item: Item) -> (id: String, environment: AppStoreEnvironment)? {
        switch item.kind {
        case .transaction: break
        case .notification:
            guard let type = item.fields.notificationType, notificationTypes.contains(type) else { return nil }
        default: return nil
        }
        let fields = item.fields
        guard let id = fields.transactionId, fields.revocationDate == nil,
              let environment = fields.environment.flatMap(AppStoreEnvironment.init(rawValue:)),
              let signedDate = fields.signedDate,
              let json = item.decodedPayloads.first(where: { $0.name == "transaction" })?.json,
              let transaction = try? JSONValue.parse(json),
              let purchaseDate = transaction["purchaseDate"]?.int64Value
        else { return nil }
        if let reason = transaction["transactionReason"] {
            guard let text = reason.stringValue, reasons.contains(text) else { return nil }
        }
        guard signedDate - purchaseDate <= signedWithin.milliseconds else { return nil }
        return (id, environment)
    }
}
