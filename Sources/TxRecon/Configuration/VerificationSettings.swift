// VerificationSettings: the [Verification] section, how intake checks App
// Store signed data before anything is queued for the backend.
//
// Defaults are here; the keys are in ConfigurationKey.all. Besides each
// value's own check, `checkCompleteness` (run by SignedDataPolicy.load) requires BundleID= and Environment=
// with Mode=appstore and AppAppleID= when Production is listed (as Apple's
// SignedDataVerifier does), throwing a `ConfigurationError` with the file,
// line and key. `startWarning` is the line the daemon logs at start when
// signatures go unchecked.

/// `[Verification]`
package struct VerificationSettings: Sendable, Equatable {
    /// `Mode=`: default `appstore`.
    package var mode = VerificationMode.appStore
    /// `RootCertificateFile=`: PEM or DER, one or more self-signed roots.
    /// Default Apple Root CA - G3 as the package installs it.
    package var rootCertificateFile = VerificationSettings.defaultRootCertificateFile
    /// `ReceiptRootCertificateFile=`: the roots StoreKit 1 receipts must
    /// chain to. Default Apple Inc. Root Certificate as the package installs it.
    package var receiptRootCertificateFile = VerificationSettings.defaultReceiptRootCertificateFile
    /// `BundleID=`: required with Mode=appstore.
    package var bundleID: String?
    /// `AppAppleID=`: the app's Apple ID; required when Production is listed.
    package var appAppleID: Int64?
    /// `Environment=`: the environments signed data may come from, in the
    /// order listed; required with Mode=appstore. A production server lists
    /// `Production Sandbox`, for App Review buys with sandbox accounts in
    /// the build that runs against it.
    package var environments: [SignedDataEnvironment] = []
    /// `AcceptEnvelopes=`: whether generic envelopes (format 5), which carry
    /// no signature, are taken. Default no.
    package var acceptEnvelopes = false

    package init() {}

    package static let defaultRootCertificateFile = "/usr/share/txrecon/AppleRootCA-G3.cer"
    package static let defaultReceiptRootCertificateFile = "/usr/share/txrecon/AppleIncRootCertificate.cer"

    /// The warning for the log at start (and check-config) when signatures
    /// go unchecked: verification is off, or the environment is not signed
    /// by the App Store; nil otherwise.
    package var startWarning: String? { Self.startWarning(mode: mode, environments: environments, of: nil) }

    /// `startWarning` for `mode` and an app's `environments` (`app`: its
    /// name, nil for the main file's).
    static func startWarning(mode: VerificationMode, environments: [SignedDataEnvironment], of app: String?) -> String? {
        if mode == .none {
            return "[Verification] Mode=none: App Store signatures are not checked; anyone who can write "
                + "to the spool can have forged transactions delivered. Use it for development only"
        }
        if environments.contains(where: { !$0.checksSignatures }) {
            let whose = app.map { " of the app \($0)" } ?? ""
            return "[Verification] Environment=\(environments.map(\.rawValue).joined(separator: " "))\(whose): "
                + "signatures are not checked, as StoreKit testing data is not signed by the App Store. Never use "
                + "it in production"
        }
        return nil
    }

    /// The checks that need every configuration file applied first.
    static func checkCompleteness(of configuration: Configuration) throws(ConfigurationError) {
        let settings = configuration.verification
        guard settings.mode == .appStore else { return }
        let modeOrigin = configuration.origins["Verification.Mode"]
        let because = modeOrigin == nil ? "with Mode=appstore (the default)" : "with Mode=appstore"
        if settings.bundleID == nil {
            // Each app file was checked as it was read.
            guard !configuration.apps.contains(where: { $0.name != App.mainName }) else { return }
            throw ConfigurationError(
                file: configuration.path, line: nil, key: "Verification.BundleID",
                message: "is required \(because); set BundleID= under [Verification] to your app's bundle "
                    + "identifier (or add an app file, apps/NAME.conf), or Mode=none to deliver without "
                    + "verification (development only)")
        }
        guard !settings.environments.isEmpty else {
            throw ConfigurationError(
                file: configuration.path, line: nil, key: "Verification.Environment",
                message: "is required \(because); set Environment= under [Verification] to \"Production Sandbox\" "
                    + "on a production server, Sandbox, Xcode or LocalTesting")
        }
        if settings.environments.contains(.production), settings.appAppleID == nil {
            let origin = configuration.origins["Verification.Environment"]
            throw ConfigurationError(
                file: origin?.file ?? configuration.path, line: origin?.line, key: "Verification.AppAppleID",
                message: "is required when Environment= lists Production, to check the appAppleId of notifications; "
                    + "set AppAppleID= under [Verification] to your app's Apple ID (App Store Connect, App Information)")
        }
    }
}

/// `Mode=`
package enum VerificationMode: String, Sendable, Equatable {
    /// Every App Store signed string is verified as Apple's SignedDataVerifier does.
    case appStore = "appstore"
    /// Decode only (development).
    case none
}

/// `Environment=` of [Verification]: the environment signed data must come
/// from, spelled as Apple's payloads spell `environment`. Wider than
/// `AppStoreEnvironment` (the servers `txrecon sweep` talks to): StoreKit
/// testing data comes from Xcode or local testing, never from a server.
package enum SignedDataEnvironment: String, Sendable, Equatable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    /// StoreKit testing in Xcode: signed by Xcode, not by the App Store.
    case xcode = "Xcode"
    /// StoreKit local testing: not signed by the App Store either.
    case localTesting = "LocalTesting"

    /// Whether data from this environment carries App Store signatures.
    package var checksSignatures: Bool { self == .production || self == .sandbox }
}
