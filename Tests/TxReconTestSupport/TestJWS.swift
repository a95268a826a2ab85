// TestJWS: builders of unsigned, valid-looking App Store inputs for tests:
// compact JWS with any header and payload, transactions, notifications and
// the JSON drop formats around them.
//
// The signature segment is 64 zero bytes (the size of an ES256 r‖s), so
// these inputs decode but never verify. The base64url encoder here is
// written apart from the library's decoder on purpose, so that one checks
// the other. Pure functions; nothing touches the file system.
import TxRecon

package enum TestJWS {
    /// A header shaped like Apple's: ES256 with three (fake) certificates.
    package static let defaultHeader: JSONValue = .object([
        ("alg", .string("ES256")),
        ("x5c", .array([.string("TEVBRg=="), .string("SU5URVJNRURJQVRF"), .string("Uk9PVA==")])),
    ])

    /// The signature segment's bytes: as long as an ES256 signature, all zero.
    package static let placeholderSignature = [UInt8](repeating: 0, count: 64)

    /// `base64url(header).base64url(payload).base64url(signature)`.
    package static func make(header: JSONValue = defaultHeader, payload: JSONValue,
                            signature: [UInt8] = placeholderSignature) -> String {
        make(headerJSON: header.serializedString, payloadJSON: payload.serializedString, signature: signature)
    }

    /// A compact JWS from raw JSON text, for inputs JSONValue cannot express
    /// (duplicate keys, invalid JSON).
    package static func make(headerJSON: String, payloadJSON: String,
                            signature: [UInt8] = placeholderSignature) -> String {
        [Array(headerJSON.utf8), Array(payloadJSON.utf8), signature].map(base64URL).joined(separator: ".")
    }

    /// The payload of a JWSTransactionDecodedPayload with the members intake
    /// reads; `extra` members are appended (or, by the same name, replace).
    package static func transactionPayload(
        transactionId: String = "2000000123456789",
        originalTransactionId: String = "2000000100000000",
        productId: String = "com.example.premium.monthly",
        bundleId: String = "com.example.app",
        environment: String = "Sandbox",
        signedDate: Int64 = 1_760_000_000_000,
        revocationDate: Int64? = nil,
        extra: [(String, JSONValue)] = []
    ) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("transactionId", .string(transactionId)),
            ("originalTransactionId", .string(originalTransactionId)),
            ("bundleId", .string(bundleId)),
            ("productId", .string(productId)),
            ("purchaseDate", .integer(signedDate - 60_000)),
            ("quantity", .integer(1)),
            ("type", .string("Auto-Renewable Subscription")),
            ("signedDate", .integer(signedDate)),
            ("environment", .string(environment)),
        ]
        if let revocationDate {
            members.append(("revocationDate", .integer(revocationDate)))
            members.append(("revocationReason", .integer(0)))
        }
        return JSONValue.object(members).merging(extra)
    }

    /// A compact JWS of a transaction; see `transactionPayload`.
    package static func transaction(
        transactionId: String = "2000000123456789",
        originalTransactionId: String = "2000000100000000",
        signedDate: Int64 = 1_760_000_000_000,
        revocationDate: Int64? = nil
    ) -> String {
        make(payload: transactionPayload(transactionId: transactionId, originalTransactionId: originalTransactionId,
                                         signedDate: signedDate, revocationDate: revocationDate))
    }

    /// The payload of a JWSRenewalInfoDecodedPayload.
    package static func renewalInfoPayload(originalTransactionId: String = "2000000100000000",
                                          signedDate: Int64 = 1_760_000_000_000) -> JSONValue {
        .object([
            ("originalTransactionId", .string(originalTransactionId)),
            ("autoRenewProductId", .string("com.example.premium.monthly")),
            ("productId", .string("com.example.premium.monthly")),
            ("autoRenewStatus", .integer(1)),
            ("signedDate", .integer(signedDate)),
            ("environment", .string("Sandbox")),
        ])
    }

    /// A compact JWS of a JWSRenewalInfoDecodedPayload.
    package static func renewalInfo(originalTransactionId: String = "2000000100000000",
                                   signedDate: Int64 = 1_760_000_000_000) -> String {
        make(payload: renewalInfoPayload(originalTransactionId: originalTransactionId, signedDate: signedDate))
    }

    /// The payload of a ResponseBodyV2DecodedPayload; `data` members
    /// `signedTransactionInfo` / `signedRenewalInfo` are added when given.
    package static func notificationPayload(
        notificationType: String = "DID_RENEW",
        subtype: String? = nil,
        notificationUUID: String = "9b2f7c1e-5d0a-4a47-9c1e-0123456789ab",
        signedDate: Int64 = 1_760_000_000_500,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        bundleId: String = "com.example.app"
    ) -> JSONValue {
        var data: [(String, JSONValue)] = [
            ("appAppleId", .integer(1_234_567_890)),
            ("bundleId", .string(bundleId)),
            ("bundleVersion", .string("42")),
            ("environment", .string("Sandbox")),
        ]
        if let signedTransactionInfo { data.append(("signedTransactionInfo", .string(signedTransactionInfo))) }
        if let signedRenewalInfo { data.append(("signedRenewalInfo", .string(signedRenewalInfo))) }
        var members: [(String, JSONValue)] = [("notificationType", .string(notificationType))]
        if let subtype { members.append(("subtype", .string(subtype))) }
        members += [
            ("notificationUUID", .string(notificationUUID)),
            ("data", .object(data)),
            ("version", .string("2.0")),
            ("signedDate", .integer(signedDate)),
        ]
        return .object(members)
    }

    /// The payload of an AppTransaction, in the member layout of Apple's
    /// published fixture (app-store-server-library-swift,
    /// Tests/…/resources/models/appTransaction.json): its environment is
    /// `receiptType`, its signing time `receiptCreationDate`.
    package static func appTransactionPayload(bundleId: String = "com.example.app", appAppleId: Int64 = 1_234_567_890,
                                             receiptType: String = "Sandbox",
                                             receiptCreationDate: Int64 = 1_760_000_000_000) -> JSONValue {
        .object([
            ("receiptType", .string(receiptType)),
            ("appAppleId", .integer(appAppleId)),
            ("bundleId", .string(bundleId)),
            ("applicationVersion", .string("1.2.3")),
            ("versionExternalIdentifier", .integer(512)),
            ("receiptCreationDate", .integer(receiptCreationDate)),
            ("originalPurchaseDate", .integer(receiptCreationDate - 100_000)),
            ("originalApplicationVersion", .string("1.1.2")),
            ("deviceVerification", .string("ZGV2aWNlX3ZlcmlmaWNhdGlvbl92YWx1ZQ==")),
            ("deviceVerificationNonce", .string("48ccfa42-7431-4f22-9908-7e88983e105a")),
            ("preorderDate", .integer(receiptCreationDate - 200_000)),
            ("appTransactionId", .string("71134")),
            ("originalPlatform", .string("iOS")),
        ])
    }

    /// The payload of a RESCIND_CONSENT notification, in the member layout
    /// of Apple's published fixture (app-store-server-library-swift,
    /// Tests/…/resources/models/signedRescindConsentNotification.json):
    /// no `data`, an `appData` container with the signed app transaction.
    package static func rescindConsentPayload(signedAppTransactionInfo: String, bundleId: String = "com.example.app",
                                             appAppleId: Int64 = 1_234_567_890, environment: String = "Sandbox",
                                             signedDate: Int64 = 1_760_000_000_500) -> JSONValue {
        .object([
            ("notificationType", .string("RESCIND_CONSENT")),
            ("notificationUUID", .string("002e14d5-51f5-4503-b5a8-c3a1af68eb20")),
            ("appData", .object([
                ("appAppleId", .integer(appAppleId)),
                ("bundleId", .string(bundleId)),
                ("environment", .string(environment)),
                ("signedAppTransactionInfo", .string(signedAppTransactionInfo)),
            ])),
            ("version", .string("2.0")),
            ("signedDate", .integer(signedDate)),
        ])
    }

    /// The payload of a notification of a type and with a container no
    /// release of Apple's documents (made up for the tests: what Apple adds
    /// next looks like this): `PARENTAL_CHOICE`, its container
    /// `parentalData` with the app's claims (unless `claims` is false), the
    /// signed member `signedParentalChoiceInfo` and a `signedNote` that is
    /// no JWS.
    package static func madeUpNotificationPayload(signedParentalChoiceInfo: String, claims: Bool = true,
                                                 notificationUUID: String = "5e0c7a7e-0000-4000-8000-000000000027")
        -> JSONValue {
        var container: [(String, JSONValue)] = []
        if claims { container += [("bundleId", .string("com.example.app")), ("environment", .string("Sandbox"))] }
        container.append(("signedParentalChoiceInfo", .string(signedParentalChoiceInfo)))
        container.append(("signedNote", .string("not a JWS, just words")))
        return .object([
            ("notificationType", .string("PARENTAL_CHOICE")),
            ("notificationUUID", .string(notificationUUID)),
            ("parentalData", .object(container)),
            ("version", .string("2.0")),
            ("signedDate", .integer(1_760_000_000_500)),
        ])
    }

    /// The payload of `signedParentalChoiceInfo` (see `madeUpNotificationPayload`).
    package static let parentalChoicePayload = JSONValue.object([
        ("bundleId", .string("com.example.app")), ("environment", .string("Sandbox")),
        ("signedDate", .integer(1_760_000_000_400)), ("choice", .string("withdrawn")),
    ])

    /// A compact JWS of a notification; see `notificationPayload`.
    package static func notification(
        notificationType: String = "DID_RENEW",
        notificationUUID: String = "9b2f7c1e-5d0a-4a47-9c1e-0123456789ab",
        signedDate: Int64 = 1_760_000_000_500,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil
    ) -> String {
        make(payload: notificationPayload(notificationType: notificationType, notificationUUID: notificationUUID,
                                          signedDate: signedDate, signedTransactionInfo: signedTransactionInfo,
                                          signedRenewalInfo: signedRenewalInfo))
    }

    /// Unpadded base64url (RFC 4648 §5) of `bytes`.
    package static func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var bits: UInt32 = 0
            for (offset, byte) in chunk.enumerated() { bits |= UInt32(byte) << (16 - 8 * offset) }
            for position in 0...chunk.count { output.append(alphabet[Int(bits >> (18 - 6 * position) & 0x3F)]) }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// The JSON bodies the spool accepts around signed strings (formats 2 to 5).
package enum TestDrop {
    /// Format 2: `{"signedPayload": "…"}`.
    package static func notificationBody(_ signedPayload: String) -> [UInt8] {
        JSONValue.object([("signedPayload", .string(signedPayload))]).serialized
    }

    /// Format 3: `{"signedTransactionInfo": "…", "signedRenewalInfo": "…"?}`.
    package static func transactionUpload(_ signedTransactionInfo: String, renewal signedRenewalInfo: String? = nil) -> [UInt8] {
        var members: [(String, JSONValue)] = [("signedTransactionInfo", .string(signedTransactionInfo))]
        if let signedRenewalInfo { members.append(("signedRenewalInfo", .string(signedRenewalInfo))) }
        return JSONValue.object(members).serialized
    }

    /// Format 4: a transaction history page.
    package static func historyPage(_ signedTransactions: [String]) -> [UInt8] {
        JSONValue.object([
            ("revision", .string("1760000000000_2000000123456789")),
            ("bundleId", .string("com.example.app")),
            ("appAppleId", .integer(1_234_567_890)),
            ("environment", .string("Sandbox")),
            ("hasMore", .bool(false)),
            ("signedTransactions", .array(signedTransactions.map(JSONValue.string))),
        ]).serialized
    }

    /// Format 5: `{"id": …, "version": …, "payload": …}`.
    package static func envelope(id: String, version: Int64, payload: JSONValue) -> [UInt8] {
        JSONValue.object([("id", .string(id)), ("version", .integer(version)), ("payload", payload)]).serialized
    }
}

extension JSONValue {
    /// This object with `extra` members: a name already present is replaced in
    /// place, a new one appended.
    package func merging(_ extra: [(String, JSONValue)]) -> JSONValue {
        guard case var .object(members) = self else { return self }
        for (name, value) in extra {
            if let index = members.firstIndex(where: { $0.0 == name }) {
                members[index].1 = value
            } else {
                members.append((name, value))
            }
        }
        return .object(members)
    }

    /// This object without the members named in `names`.
    package func removing(_ names: String...) -> JSONValue {
        guard case let .object(members) = self else { return self }
        return .object(members.filter { !names.contains($0.0) })
    }
}
