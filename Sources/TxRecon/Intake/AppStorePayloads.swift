// AppStorePayloads: the members of Apple's decoded JWS payloads that txrecon
// reads, and how they make an item's key, version and fields.
//
// Member names are Apple's own. Only what delivery needs is read; the signed
// strings travel to the backend verbatim, so nothing else is lost. Missing or
// mistyped members are thrown as `missing-field` / `invalid-field`
// rejections naming the member and where it was read; nothing is logged.

/// The members of a JWSTransactionDecodedPayload that txrecon reads.
/// https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload
struct TransactionPayload: Sendable {
    /// The `transactionId`: the item key.
    var transactionId: ItemKey
    var originalTransactionId: String?
    var productId: String?
    var appAccountToken: String?
    var bundleId: String?
    var environment: String?
    /// When the App Store signed this snapshot, ms since 1970.
    var signedDate: Int64
    /// When the App Store refunded or revoked the transaction, ms since 1970.
    var revocationDate: Int64?
    /// A subscription's, ms since 1970.
    var expiresDate: Int64?
    var webOrderLineItemId: String?
    /// Apple's one id per Apple Account that downloaded the app.
    var appTransactionId: String?

    /// Reads `payload`; `subject` names it in messages, e.g.
    /// `the transaction in signedTransactionInfo (format 3)`.
    init(_ payload: JSONValue, subject: String) throws(Rejection) {
        let reader = PayloadReader(object: payload, subject: subject)
        transactionId = try reader.requireKey("transactionId")
        originalTransactionId = try reader.string("originalTransactionId")
        productId = try reader.string("productId")
        appAccountToken = try reader.string("appAccountToken")
        bundleId = try reader.string("bundleId")
        environment = try reader.string("environment")
        signedDate = try reader.requireMilliseconds("signedDate")
        revocationDate = try reader.milliseconds("revocationDate")
        expiresDate = reader.informationalMilliseconds("expiresDate")
        webOrderLineItemId = reader.informationalText("webOrderLineItemId")
        appTransactionId = reader.informationalText("appTransactionId")
    }

    /// The snapshot's place among others of the same transaction; a
    /// notification carrying it passes its own `signedDate` (ms) to order
    /// notifications about the same snapshot.
    func version(notificationSignedDate: Int64 = 0) -> ItemVersion {
        ItemVersion(primary: signedDate, revoked: revocationDate != nil, secondary: notificationSignedDate)
    }

    /// Copies the transaction's members into `fields`.
    func fill(_ fields: inout ItemFields) {
        fields.transactionId = transactionId.rawValue
        fields.originalTransactionId = originalTransactionId
        fields.productId = productId
        fields.appAccountToken = appAccountToken
        fields.bundleId = bundleId
        fields.environment = environment
        fields.signedDate = signedDate
        fields.revocationDate = revocationDate
        fields.expiresDate = expiresDate
        fields.webOrderLineItemId = webOrderLineItemId
        fields.appTransactionId = appTransactionId
    }
}

/// The members of a ResponseBodyV2DecodedPayload (App Store Server
/// Notifications V2) that txrecon reads.
/// https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload
///
/// Apple extends the layout without notice (RESCIND_CONSENT brought the
/// container `appData` in 2025), so nothing here depends on knowing a
/// notification's type or its containers: every object member of the
/// payload is a container; every member of a container named `signed…`
/// that holds a compact JWS is a nested signed string (verified like the
/// others); the app's claims come from whichever container names a
/// bundleId (`AppClaims`). What txrecon does not know is listed in
/// `novelties`, for intake to report.
struct NotificationPayload: Sendable {
    var notificationType: String
    var subtype: String?
    var notificationUUID: String
    /// When the App Store signed the notification, ms since 1970.
    var signedDate: Int64
    /// The app and environment its containers name; nil when none names
    /// any. Its signed members' fill in what they lack (`AppClaims(
    /// notification:filledFrom:)`); one that names no bundleId even then
    /// is refused as `no-app-named`.
    var claims: AppClaims?
    /// Each nested signed string verbatim, by name (a second one of a name
    /// by `container.name`), Apple's documented containers first, else in
    /// the payload's order of containers and members.
    var nestedSignedStrings: [(name: String, value: String)] = []
    /// Its type, containers and signed members this release does not know.
    var novelties: [AppleNovelty] = []

    /// The containers Apple documents, in the order claims are looked for.
    static let knownContainers = ["data", "appData", "summary", "externalPurchaseToken"]

    /// Reads `payload`; `subject` names it in messages, e.g.
    /// `the notification in signedPayload (format 2)`.
    init(_ payload: JSONValue, subject: String) throws(Rejection) {
        let reader = PayloadReader(object: payload, subject: subject)
        notificationType = try reader.requireString("notificationType")
        subtype = try reader.string("subtype")
        notificationUUID = try reader.requireString("notificationUUID")
        signedDate = try reader.requireMilliseconds("signedDate")
        if !NotificationType.documented.contains(notificationType) {
            novelties.append(.notificationType(notificationType))
        }
        // Apple's documented containers first, so that a member of one of
        // them is the first of its name, whatever the order of the JSON.
        let containers = (payload.objectValue ?? []).filter { NotificationPayload.knownContainers.contains($0.0) }
            + (payload.objectValue ?? []).filter { !NotificationPayload.knownContainers.contains($0.0) }
        for (container, value) in containers {
            guard case let .object(members) = value else { continue }
            if !NotificationPayload.knownContainers.contains(container) { novelties.append(.container(container)) }
            for (name, inner) in members {
                guard let kind = SignedDataKind(signedStringName: name) else { continue }
                let known = NotificationPayload.knownContainers.contains(container)
                guard case let .string(text) = inner else {
                    // A member Apple documents as a JWS must be one where
                    // Apple documents it; another `signed…` member that is
                    // not a string, or one in a container Apple added since
                    // (whose layout txrecon cannot know), is plain data.
                    guard kind == .unknown || !known else {
                        throw PayloadReader(object: value, subject: "\(container) of \(subject)")
                            .invalid(name, inner, expected: "a string (a compact JWS)")
                    }
                    continue
                }
                // A known name holds a JWS (a malformed one is refused when
                // parsed); an unknown one, or any in a container Apple
                // added since, only when it is shaped like one.
                guard (kind != .unknown && known) || CompactJWS.isShaped(text) else { continue }
                // A second member of a name another container has (in a
                // container Apple added since, say) is verified and
                // delivered under its container's name: the first, Apple's
                // documented containers first, is the one the item is of.
                // `signedPayload` is the notification's own name in the item.
                let taken = name == "signedPayload" || nestedSignedStrings.contains { $0.name == name }
                nestedSignedStrings.append((taken ? "\(container).\(name)" : name, text))
                if kind == .unknown { novelties.append(.signedMember(name)) }
            }
        }
        claims = try AppClaims(notification: payload, subject: subject)
    }

    /// Where the signed member `name` (as `nestedSignedStrings` names it)
    /// is in `payload`, a notification's: `container.member`, for messages.
    static func place(of name: String, in payload: JSONValue) -> String {
        if name.contains(".") { return name }
        let container = (payload.objectValue ?? []).first { $0.1.objectValue?.contains { $0.0 == name } == true }?.0
        return "\(container ?? "data").\(name)"
    }
}

/// A name in a verified notification that this release of txrecon does
/// not know: Apple added it since. Reported once per name (Intake).
enum AppleNovelty: Hashable, Sendable {
    case notificationType(String)
    case container(String)
    case signedMember(String)

    /// `notificationType`, `container`, `signedMember`: the metric's label.
    var what: String {
        switch self {
        case .notificationType: "notificationType"
        case .container: "container"
        case .signedMember: "signedMember"
        }
    }

    var name: String {
        switch self {
        case let .notificationType(name), let .container(name), let .signedMember(name): name
        }
    }
}

/// The members of a signed payload that name its app and environment,
/// read here for the decoder and the verifier alike.
struct AppClaims: Sendable, Equatable {
    var bundleID: String?
    var appAppleID: Int64?
    var environment: String?

    /// A notification's: each claim from the first container that carries
    /// it, Apple's documented ones first (`data`, `appData`, `summary`,
    /// `externalPurchaseToken`, whose environment Apple derives from the
    /// `externalPurchaseId` prefix), then any other in the payload's order;
    /// nil when no container carries any. A member of the wrong type is a
    /// `Rejection`.
    init?(notification payload: JSONValue, subject: String) throws(Rejection) {
        let members = payload.objectValue ?? []
        let others = members.map(\.0).filter { !NotificationPayload.knownContainers.contains($0) }
        for name in NotificationPayload.knownContainers + others {
            guard let container = members.first(where: { $0.0 == name })?.1, case .object = container else { continue }
            let inner = PayloadReader(object: container, subject: "\(name) of \(subject)")
            // A claim of the wrong type is refused where Apple documents
            // it; in a container Apple added since, it is no claim.
            let documented = NotificationPayload.knownContainers.contains(name)
            func read<T>(_ claim: () throws(Rejection) -> T?) throws(Rejection) -> T? {
                do { return try claim() } catch { if documented { throw error } else { return nil } }
            }
            if bundleID == nil { bundleID = try read { () throws(Rejection) in try inner.string("bundleId") } }
            if appAppleID == nil {
                appAppleID = try read { () throws(Rejection) in try AppClaims.appAppleID(inner, container) }
            }
            if environment == nil {
                if name == "externalPurchaseToken" {
                    // Apple's spelling of the two environments (SignedDataEnvironment).
                    environment = try inner.string("externalPurchaseId").map { id in
                        id.hasPrefix("SANDBOX") ? "Sandbox" : "Production"
                    }
                } else {
                    environment = try read { () throws(Rejection) in try inner.string("environment") }
                }
            }
        }
        guard bundleID != nil || appAppleID != nil || environment != nil else { return nil }
    }

    /// A notification's claims `own` (its containers'), each one they lack
    /// taken from the first of `nested` (its signed members' claims, in
    /// their order) that carries it: a notification whose containers do
    /// not name its app or environment is of the app and environment its
    /// verified members name. nil when none carries any.
    init?(notification own: AppClaims?, filledFrom nested: [AppClaims?]) {
        for claims in ([own] + nested).lazy.compactMap({ $0 }) {
            bundleID = bundleID ?? claims.bundleID
            appAppleID = appAppleID ?? claims.appAppleID
            environment = environment ?? claims.environment
        }
        guard bundleID != nil || appAppleID != nil || environment != nil else { return nil }
    }

    /// A signed payload's of `kind` (not a notification): an app
    /// transaction names its environment `receiptType`.
    init(_ payload: JSONValue, kind: SignedDataKind, subject: String) throws(Rejection) {
        let reader = PayloadReader(object: payload, subject: subject)
        bundleID = try reader.string("bundleId")
        appAppleID = try AppClaims.appAppleID(reader, payload)
        if kind == .appTransaction, let receiptType = try reader.string("receiptType") {
            environment = receiptType
        } else {
            environment = try reader.string("environment")
        }
    }

    private static func appAppleID(_ reader: PayloadReader, _ object: JSONValue) throws(Rejection) -> Int64? {
        guard let value = object["appAppleId"] else { return nil }
        guard let number = value.int64Value else { throw reader.invalid("appAppleId", value, expected: "an integer") }
        return number
    }
}
