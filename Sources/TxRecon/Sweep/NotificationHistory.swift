// NotificationHistory: the body of a Get Notification History request and
// the reading of its answers (App Store Server API,
// POST /inApps/v1/notifications/history).
//
// Request (NotificationHistoryRequest): `startDate` and `endDate` in UNIX
// milliseconds, and `onlyFailures` when true; the same body on every page of
// one window, as Apple requires for the pagination token to hold.
// Answer (NotificationHistoryResponse): `notificationHistory[]` of
// `{signedPayload, sendAttempts[]}` (at most 20), `hasMore`,
// `paginationToken`. An error answer carries `{errorCode, errorMessage}`.
//
// Pure: no I/O, nothing logged. A page that is not what Apple documents is
// a `NotificationHistoryPage.Malformed` naming the member at fault.

/// One Get Notification History request body.
struct NotificationHistoryRequest: Sendable, Equatable {
    /// Inclusive, UNIX milliseconds.
    var startDate: Int64
    /// Exclusive, UNIX milliseconds.
    var endDate: Int64
    /// Only notifications that never reached the receiver.
    var onlyFailures: Bool

    /// The JSON body; `onlyFailures` only when true (Apple: include only the
    /// fields that constrain the answer).
    var body: [UInt8] {
        var members: [(String, JSONValue)] = [("startDate", .integer(startDate)), ("endDate", .integer(endDate))]
        if onlyFailures { members.append(("onlyFailures", .bool(true))) }
        return JSONValue.object(members).serialized
    }
}

/// One notification from the history, with what the sweep reads of it
/// without verifying it (the daemon verifies): enough to recognise it again
/// and to list it.
package struct HistoryNotification: Sendable, Equatable {
    /// The JWS exactly as Apple returned it.
    var signedPayload: String
    /// From the unverified payload; nil when it cannot be read (the daemon
    /// will reject the drop with the reason).
    var notificationUUID: String?
    var notificationType: String?
    var subtype: String?
    /// The payload's `signedDate`, UNIX milliseconds.
    var signedDate: Int64?
    /// `sendAttemptResult` of the last of `sendAttempts`, e.g. `SUCCESS`,
    /// `TIMED_OUT`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`.
    var lastSendAttemptResult: String?

    init(signedPayload: String, lastSendAttemptResult: String? = nil) {
        self.signedPayload = signedPayload
        self.lastSendAttemptResult = lastSendAttemptResult
        guard let payload = try? CompactJWS(compact: signedPayload).payload else { return }
        notificationUUID = payload["notificationUUID"]?.stringValue
        notificationType = payload["notificationType"]?.stringValue
        subtype = payload["subtype"]?.stringValue
        signedDate = payload["signedDate"]?.int64Value
    }

    /// What the sweep drops into new/: an App Store Server Notifications V2
    /// body, as Apple would have POSTed it (format 2).
    var spoolBody: [UInt8] {
        JSONValue.object([("signedPayload", .string(signedPayload))]).serialized
    }
}

/// One page of the history.
struct NotificationHistoryPage: Sendable, Equatable {
    var notifications: [HistoryNotification]
    var hasMore: Bool
    /// Where the next page starts; only meaningful when `hasMore`.
    var paginationToken: String?

    /// A 200 answer that is not a NotificationHistoryResponse.
    struct Malformed: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// Reads a 200 answer's body.
    init(json bytes: [UInt8]) throws(Malformed) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw Malformed(description: "the answer is not JSON (\(error))")
        }
        guard value.objectValue != nil else { throw Malformed(description: "the answer is not a JSON object") }
        // Both members are in every answer Apple documents. Without them a
        // 200 is not a page at all (a wrong BaseURL=, a captive proxy, a
        // changed API), and taken as an empty last one it would mark a
        // window as swept that was never read.
        guard let entries = value["notificationHistory"]?.arrayValue else {
            throw Malformed(description: value["notificationHistory"] == nil
                ? "it has no notificationHistory" : "notificationHistory is not an array")
        }
        var notifications: [HistoryNotification] = []
        for (index, entry) in entries.enumerated() {
            guard let signedPayload = entry["signedPayload"]?.stringValue, !signedPayload.isEmpty else {
                throw Malformed(description: "notificationHistory[\(index)] has no signedPayload string")
            }
            let lastResult = entry["sendAttempts"]?.arrayValue?.last?["sendAttemptResult"]?.stringValue
            notifications.append(HistoryNotification(signedPayload: signedPayload, lastSendAttemptResult: lastResult))
        }
        guard case .bool(let hasMore)? = value["hasMore"] else {
            throw Malformed(description: value["hasMore"] == nil ? "it has no hasMore" : "hasMore is not a boolean")
        }
        let token = value["paginationToken"]?.stringValue
        if hasMore && (token ?? "").isEmpty {
            throw Malformed(description: "hasMore is true but there is no paginationToken")
        }
        self.notifications = notifications
        self.hasMore = hasMore
        paginationToken = token
    }

    init(notifications: [HistoryNotification], hasMore: Bool, paginationToken: String?) {
        self.notifications = notifications
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }
}

/// An answer other than 200, as the App Store Server API words it.
struct AppStoreAPIError: Sendable, Equatable {
    /// The HTTP status.
    var status: Int
    /// Apple's `errorCode` (e.g. 4290000, 5000001, 4000017), when the body
    /// has one.
    var errorCode: Int64?
    /// Apple's `errorMessage`, one line, at most 200 characters.
    var errorMessage: String?
    /// The raw `Retry-After` header.
    var retryAfter: String?

    /// `redactor` blanks out what the request sent in confidence (its
    /// token) wherever `errorMessage` repeats it, before it is shortened.
    init(status: Int, body: [UInt8], retryAfter: String?, redactor: SecretRedactor? = nil) {
        self.status = status
        self.retryAfter = retryAfter
        let value = try? JSONValue.parse(body)
        errorCode = value?["errorCode"]?.int64Value
        errorMessage = value?["errorMessage"]?.stringValue.map {
            LogText.singleLine(redactor?.redact($0) ?? $0, limit: 200)
        }
    }

    /// "HTTP 400, errorCode 4000017 (Pagination token is expired.)"
    var summary: String {
        var text = "HTTP \(status)"
        if let errorCode { text += ", errorCode \(errorCode)" }
        if let errorMessage { text += " (\(errorMessage))" }
        return text
    }
}
