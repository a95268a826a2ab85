// NotificationType: the notificationType values of App Store Server
// Notifications V2 that Apple documents. Nothing here decides what is taken:
// intake keeps whatever type a verified notification carries (Apple adds
// types without notice, as it did with METADATA_UPDATE, MIGRATION and
// RESCIND_CONSENT). The list lets check-config, start and a reload warn about
// a `[Match] NotificationType=` no documented notification carries: most
// likely a typo, which would otherwise match nothing, silently.
// https://developer.apple.com/documentation/appstoreservernotifications/notificationtype

enum NotificationType {
    /// Apple's documented values, in its alphabetical order.
    static let documented = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RENEW",
        "EXPIRED", "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "METADATA_UPDATE", "MIGRATION", "OFFER_REDEEMED",
        "ONE_TIME_CHARGE", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED", "RENEWAL_EXTENDED",
        "RENEWAL_EXTENSION", "RESCIND_CONSENT", "REVOKE", "SUBSCRIBED", "TEST",
    ]
}
