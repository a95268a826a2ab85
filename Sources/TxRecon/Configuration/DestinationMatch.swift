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
    /// `App=`: the names of apps (`apps/NAME.conf`, or `main`). An item
    /// goes by its verified `bundleId`; one that names no app (an
    /// envelope) does not match a destination that sets it.
    package var apps: [String]?
    /// The bundle ids of `apps`, which the loader fills in once every app
    /// is read; what the decision compares.
    package var appBundleIDs: [String]?

    package init() {}

    /// Whether `item` goes to this destination.
    func accepts(_ item: Item) -> Bool {
        accepts(kind: item.kind, environment: item.fields.environment, notificationType: item.fields.notificationType,
                bundleID: item.fields.bundleId)
    }

    /// Whether an App Store item of `kind` other than a notification, from
    /// `environment` and the app `bundleID`, goes to this destination.
    func takes(_ kind: ItemKind, environment: String, bundleID: String?) -> Bool {
        accepts(kind: kind, environment: environment, notificationType: nil, bundleID: bundleID)
    }

    /// The decision itself, on the four fields a match looks at.
    private func accepts(kind: ItemKind, environment: String?, notificationType: String?, bundleID: String?) -> Bool {
        if let environments, !environments.contains(where: { $0 == environment }) { return false }
        if let kinds, !kinds.contains(kind) { return false }
        if let notificationTypes, !notificationTypes.contains(where: { $0 == notificationType }) { return false }
        if let appBundleIDs, !appBundleIDs.contains(where: { $0 == bundleID }) { return false }
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
        let bundleIDs: [String?] = Array(Set((appBundleIDs ?? []) + (other.appBundleIDs ?? [])))
            + ["(an app neither names)"]
        var items: [(ItemKind, String?, String?, String?)] = [(.envelope, nil, nil, nil)]
        for environment in environments {
            for bundleID in bundleIDs {
                items += [(.transaction, environment, nil, bundleID), (.receipt, environment, nil, bundleID),
                          (.receiptFile, environment, nil, bundleID)]
                items += types.map { (.notification, environment, $0, bundleID) }
            }
        }
        return items.contains { kind, environment, type, bundleID in
            accepts(kind: kind, environment: environment, notificationType: type, bundleID: bundleID)
                && other.accepts(kind: kind, environment: environment, notificationType: type, bundleID: bundleID)
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
        if let apps { parts.append("App=" + apps.joined(separator: " ")) }
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

    /// `Match.App`: names of apps; that each is configured is checked once
    /// every file is read.
    static func matchApps(_ text: String) throws(InvalidValue) -> [String]? {
        try words(of: text, what: "an app name") { word in
            word == App.mainName || DestinationName.isValid(word, reserved: App.mainName) ? word : nil
        } accepted: { "write the names of apps: \(App.mainName) for the main file's, NAME for apps/NAME.conf" }
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
