// SweepSettings: the [Sweep] section of txrecon.conf, read only by
// `txrecon sweep`: which app's App Store notification history to page, with
// which App Store Server API key, against which server, how far apart the
// requests go and how the history is cut into windows.
//
// The daemon ignores this section, so it may stay empty on hosts that do not
// sweep. Values are checked as they are read, like every other key (an
// `InvalidValue` the loader places on the file and line); keys only the sweep
// needs (BundleID=, IssuerID=, KeyID=, the key itself) are required when the
// sweep starts, by `SweepCredentials.load`. Nothing here reads a file.

/// The two App Store environments, spelled as Apple spells them in
/// payloads (`environment`) and in App Store Connect.
package enum AppStoreEnvironment: String, Sendable, Equatable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"

    /// Apple's App Store Server API host for this environment.
    var defaultBaseURL: String {
        switch self {
        case .production: "https://api.storekit.apple.com"
        case .sandbox: "https://api.storekit-sandbox.apple.com"
        }
    }

    /// How far back Get Notification History reaches: 180 days in
    /// production, 30 in the sandbox.
    package var historyLimit: Duration {
        switch self {
        case .production: .seconds(180 * 86_400)
        case .sandbox: .seconds(30 * 86_400)
        }
    }
}

/// `[Sweep]`
package struct SweepSettings: Sendable, Equatable {
    /// `Environment=`: `Production` (default) or `Sandbox`. Chooses the
    /// default server and the history limit (180 or 30 days).
    package var environment = AppStoreEnvironment.production
    /// `BundleID=`: the app's bundle identifier, sent as the token's `bid`.
    /// Required by `txrecon sweep`.
    package var bundleID: String?
    /// `IssuerID=`: the issuer id from App Store Connect's Keys page, sent as
    /// the token's `iss`. Required by `txrecon sweep`.
    package var issuerID: String?
    /// `KeyID=`: the id of the In-App Purchase key, sent as the token
    /// header's `kid`. Required by `txrecon sweep`.
    package var keyID: String?
    /// `PrivateKeyFile=`: the key's `.p8` file (PKCS#8 PEM, P-256). When
    /// unset, the systemd credential `appstore-key` is used.
    package var privateKeyFile: String?
    /// `BaseURL=`: the App Store Server API's address; nil means Apple's
    /// server for `environment`. Tests point it at 127.0.0.1.
    package var baseURL: String?
    /// `Window=`: the longest date range one series of history requests
    /// covers, and so how far the checkpoint advances at a time. Default 1
    /// day; 1 minute to 30 days.
    package var window: Duration = .seconds(86_400)
    /// `Overlap=`: how far before the checkpoint each run starts again, so
    /// that notifications Apple records late are not missed. Default 1 hour;
    /// at most 7 days.
    package var overlap: Duration = .seconds(3600)
    /// `MaxRequestsPerSecond=`: the pace of history requests. Default 5 (the
    /// sandbox's limit; production allows 50); 1 to 50.
    package var maxRequestsPerSecond = 5

    package init() {}

    /// `baseURL`, or Apple's server for `environment`.
    package var effectiveBaseURL: String { baseURL ?? environment.defaultBaseURL }
}

extension SettingValue {
    /// `Production` or `Sandbox`, as Apple spells them.
    static func appStoreEnvironment(_ text: String) throws(InvalidValue) -> AppStoreEnvironment {
        if let environment = AppStoreEnvironment(rawValue: text) { return environment }
        let names = AppStoreEnvironment.allCases.map(\.rawValue)
        if let spelled = names.first(where: { $0.lowercased() == text.lowercased() }) {
            throw InvalidValue(message: "\"\(text)\" is not an environment; write \(spelled) (as Apple spells it)")
        }
        throw InvalidValue(message: "\"\(text)\" is not an environment; write Production or Sandbox")
    }

    /// An identifier from App Store Connect (bundle id, issuer id, key id):
    /// 1 to 255 visible ASCII characters without quotes or backslashes.
    static func appStoreIdentifier(_ text: String) throws(InvalidValue) -> String {
        let allowed = text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        guard allowed, (1...255).contains(text.utf8.count) else {
            throw InvalidValue(message: "\"\(LogText.singleLine(text, limit: 80))\" is not an identifier as App Store "
                + "Connect shows it; copy it without spaces or quotes")
        }
        return text
    }

    /// `Window=`: 1 minute to 30 days.
    static func sweepWindow(_ text: String) throws(InvalidValue) -> Duration {
        let span = try timeSpan(text)
        guard span >= .seconds(60), span <= .seconds(30 * 86_400) else {
            throw InvalidValue(message: "\"\(text)\" is not between 1min and 30d")
        }
        return span
    }

    /// `Overlap=`: zero to 7 days.
    static func sweepOverlap(_ text: String) throws(InvalidValue) -> Duration {
        let span = try timeSpan(text)
        guard span <= .seconds(7 * 86_400) else {
            throw InvalidValue(message: "\"\(text)\" is longer than 7d")
        }
        return span
    }
}
