// DestinationMatch: which items a destination receives, from its `[Match]`
// section. Each key narrows; an unset key matches everything, so a
// destination without `[Match]` (today's single `[Backend]`) receives every
// item. Pure: decided on the fields intake decoded, never on the context the
// app sent beside the signed data. Also whether two matches can take the same
// item, and which `NotificationType=` values Apple does not document, for
// ConfigurationWarnings.

/// `[Match]`
package struct DestinationMatch: Sendable, Equatable {
    /// `Environment=`: Apple's spelling (`Production`, `Sandbox`, `Xcode`,
    /// `LocalTesting`). An item without an environment (an envelope) does
    /// not match a destination that sets it.
    package var environments: [String]?
    /// `Kind=`: the body's `kind` (`appstore.transaction`,
    /// `appstore.notification`, `appstore.receipt`, `appstore.receipt-file`,
    /// `envelope`).
    package var kinds: [ItemKind]?
    /// `NotificationType=`: Apple's notificationType (`REFUND`,
    /// `DID_RENEW`, …). Only notifications carry one; nothing else matches
    /// a destination that sets it.
    package var notificationTypes: [String]?

    package init() {}

    /// Whether `item` goes to this destination.
    func accepts(_ item: Item) -> Bool {
        accepts(kind: item.kind, environment: item.fields.environment, notificationType: item.fields.notificationType)
    }

    /// Whether an App Store item of `kind` other than a notification, from
    /// `environment`, goes to this destination.
    func takes(_ kind: ItemKind, environment: String) -> Bool {
        accepts(kind: kind, environment: environment, notificationType: nil)
    }

    /// The decision itself, on the three fields a match looks at.
    private func accepts(kind: ItemKind, environment: String?, notificationType: String?) -> Bool {
        if let environments, !environments.contains(where: { $0 == environment }) { return false }
        if let kinds, !kinds.contains(kind) { return false }
        if let notificationTypes, !notificationTypes.contains(where: { $0 == notificationType }) { return false }
        return true
    }

    /// Whether some item could go to both this destination and `other`:
    /// tried on every kind of item with each field it can carry (an
    /// envelope has no environment, only a notification a type), each
    /// type either names and one neither does.
    func overlaps(_ other: DestinationMatch) -> Bool {
        let environments: [String?] = SignedDataEnvironment.allCases.map(\.rawValue)
        let types: [String?] = Array(Set((notificationTypes ?? []) + (other.notificationTypes ?? [])))
            + ["(a type neither names)"]
        var items: [(ItemKind, String?, String?)] = [(.envelope, nil, nil)]
        for environment in environments {
            items += [(.transaction, environment, nil), (.receipt, environment, nil), (.receiptFile, environment, nil)]
            items += types.map { (.notification, environment, $0) }
        }
        return items.contains { kind, environment, type in
            accepts(kind: kind, environment: environment, notificationType: type)
                && other.accepts(kind: kind, environment: environment, notificationType: type)
        }
    }

    /// The `NotificationType=` values Apple does not document
    /// (`NotificationType.documented`), each with the documented one
    /// nearest to it when one is near enough to be a slip.
    var undocumentedNotificationTypes: [(type: String, nearest: String?)] {
        (notificationTypes ?? []).filter { !NotificationType.documented.contains($0) }.map { type in
            (type, NearestName.suggestion(for: type, among: NotificationType.documented))
        }
    }

    /// The match in words, for check-config and the start-up log:
    /// `every item`, or `Environment=Sandbox Kind=appstore.notification`.
    package var summary: String {
        var parts: [String] = []
        if let environments { parts.append("Environment=" + environments.joined(separator: " ")) }
        if let kinds { parts.append("Kind=" + kinds.map(\.rawValue).joined(separator: " ")) }
        if let notificationTypes { parts.append("NotificationType=" + notificationTypes.joined(separator: " ")) }
        return parts.isEmpty ? "every item" : parts.joined(separator: " ")
    }
}

extension SettingValue {
    /// `Match.Environment`: one or more of Apple's environment names.
    static func matchEnvironments(_ text: String) throws(InvalidValue) -> [String]? {
        let known = SignedDataEnvironment.allCases.map(\.rawValue)
        return try words(of: text, what: "an App Store environment") { word in
            known.contains(word) ? word : nil
        } accepted: { "write one or more of " + known.joined(separator: ", ") }
    }

    /// `Match.Kind`: one or more item kinds as the body's `kind` spells them.
    static func matchKinds(_ text: String) throws(InvalidValue) -> [ItemKind]? {
        try words(of: text, what: "an item kind", ItemKind.init(rawValue:)) {
            "write one or more of appstore.transaction, appstore.notification, appstore.receipt, "
                + "appstore.receipt-file, envelope"
        }
    }

    /// `Match.NotificationType`: Apple's notification types, upper-case
    /// letters and `_` (`REFUND`, `DID_RENEW`).
    static func matchNotificationTypes(_ text: String) throws(InvalidValue) -> [String]? {
        try words(of: text, what: "a notification type") { word in
            let valid = word.utf8.allSatisfy {
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || $0 == UInt8(ascii: "_")
            }
            return valid ? word : nil
        } accepted: { "write Apple's notificationType values, such as REFUND DID_RENEW" }
    }

    /// Space-separated words, each parsed by `parse`; a repeated one counts once.
    private static func words<Value: Equatable>(
        of text: String, what: String, _ parse: (String) -> Value?, accepted: () -> String
    ) throws(InvalidValue) -> [Value] {
        var values: [Value] = []
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            guard let value = parse(String(word)) else {
                throw InvalidValue(message: "\"\(word)\" is not \(what); \(accepted())")
            }
            if !values.contains(value) { values.append(value) }
        }
        guard !values.isEmpty else { throw InvalidValue(message: "\"\(text)\" lists nothing; \(accepted())") }
        return values
    }
}
