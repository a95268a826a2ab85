// TestNotificationStatus: Apple's answer to Get Test Notification Status
// (CheckTestNotificationResponse): the TEST notification it sent, and each
// attempt to send it to the environment's notification URL with its result.
// Reports: nothing; a body that is not this answer is an APIReadFailure.

struct TestNotificationStatus: Sendable, Equatable {
    struct SendAttempt: Sendable, Equatable {
        /// UNIX milliseconds.
        var date: Int64
        /// `SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …
        var result: String
    }

    /// The TEST notification, read without verifying it: the probe follows
    /// it by its notificationUUID, and the daemon verifies what arrived.
    var notification: HistoryNotification
    var sendAttempts: [SendAttempt]

    init(notification: HistoryNotification, sendAttempts: [SendAttempt]) {
        self.notification = notification
        self.sendAttempts = sendAttempts
    }

    init(json body: [UInt8]) throws(APIReadFailure) {
        guard let value = try? JSONValue.parse(body), value.objectValue != nil else {
            throw APIReadFailure("the answer is not a JSON object")
        }
        guard let signedPayload = value["signedPayload"]?.stringValue else {
            throw APIReadFailure("the answer has no signedPayload string")
        }
        var attempts: [SendAttempt] = []
        if let listed = value["sendAttempts"] {
            guard let items = listed.arrayValue else { throw APIReadFailure("sendAttempts is not an array") }
            for item in items {
                guard let date = item["attemptDate"]?.int64Value, let result = item["sendAttemptResult"]?.stringValue
                else { throw APIReadFailure("a sendAttempts item lacks attemptDate or sendAttemptResult") }
                attempts.append(SendAttempt(date: date, result: result))
            }
        }
        notification = HistoryNotification(signedPayload: signedPayload)
        sendAttempts = attempts
    }

    /// What a failed attempt's result means for the operator.
    static func meaning(of result: String) -> String {
        switch result {
        case "TIMED_OUT", "NO_RESPONSE", "SOCKET_ISSUE", "PREMATURE_CLOSE":
            "Apple could not reach the receiver: check the notification URL in App Store Connect, DNS, the "
                + "firewall, the reverse proxy and `systemctl status txrecon-receive.socket`"
        case "TLS_ISSUE":
            "Apple refused the TLS connection: the certificate must chain to a public CA, match the host "
                + "name and be valid; TLS 1.2 or newer"
        case "UNSUCCESSFUL_HTTP_RESPONSE_CODE":
            "the receiver (or a proxy before it) answered other than 2xx: a signature or environment the "
                + "receiver refused (422, 400), a full spool (503) or a wrong path; see "
                + "`journalctl -u txrecon-receive` for the request"
        case "CIRCULAR_REDIRECT", "INVALID_RESPONSE", "UNSUPPORTED_CHARSET":
            "the answer was not one Apple accepts: a proxy that redirects or rewrites it"
        default:
            "Apple gives no more detail"
        }
    }
}

/// A 200 whose body is not what the endpoint returns.
struct APIReadFailure: Error, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
