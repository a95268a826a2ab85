// SignedDataPolicy: what App Store signed data must satisfy to be taken,
// built from the [Verification] section and the apps: the trusted roots
// (read from RootCertificateFile=), and for each app its bundle identifier,
// App Apple ID and environments.
//
// `load(for:)` runs at start-up, on reload and for check-config: it requires
// what Mode=appstore needs (VerificationSettings.checkCompleteness) and reads
// the root file; it throws a `ConfigurationError` naming the configuration
// file, line and key at fault. Commands that only read the spool (status,
// list) do not call it, so they work while [Verification] is incomplete.
// Blocks on disk I/O, like the configuration loader. Logs nothing.

/// What one app's signed data must carry.
package struct AppPolicy: Sendable, Equatable {
    /// The app's name (`App.name`).
    package var name: String
    /// `bundleId` the app's transactions and notifications carry.
    package var bundleID: String
    /// `appAppleId` the app's Production notifications and app transactions
    /// must carry; nil unless Production is listed.
    package var appAppleID: Int64?
    /// The environments the app's signed data may come from.
    package var environments: [SignedDataEnvironment]

    package init(name: String = App.mainName, bundleID: String, appAppleID: Int64?,
                 environments: [SignedDataEnvironment]) {
        self.name = name
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environments = environments
    }
}

/// The checks intake applies to every App Store signed string (Mode=appstore).
package struct SignedDataPolicy: Sendable, Equatable {
    /// The trust anchors; empty when the environments skip signature checks.
    package var roots: [RootCertificate]
    /// The apps served, each with its claims: signed data is checked
    /// against the app its `bundleId` names.
    package var apps: [AppPolicy]
    /// The roots StoreKit 1 receipts must chain to; empty when the
    /// environments skip signature checks, or when the default file is not
    /// installed (then `receiptRootsMissing` says so, and every receipt is
    /// refused with that sentence).
    package var receiptRoots: [RootCertificate]
    package var receiptRootsMissing: String?

    package init(roots: [RootCertificate], apps: [AppPolicy], receiptRoots: [RootCertificate] = [],
                 receiptRootsMissing: String? = nil) {
        self.roots = roots
        self.apps = apps
        self.receiptRoots = receiptRoots
        self.receiptRootsMissing = receiptRootsMissing
    }

    /// A policy of one app, `main`.
    package init(roots: [RootCertificate], bundleID: String, appAppleID: Int64?, environments: [SignedDataEnvironment],
                receiptRoots: [RootCertificate] = [], receiptRootsMissing: String? = nil) {
        self.init(roots: roots, apps: [AppPolicy(bundleID: bundleID, appAppleID: appAppleID, environments: environments)],
                  receiptRoots: receiptRoots, receiptRootsMissing: receiptRootsMissing)
    }

    /// Whether signatures are checked: whenever an App Store environment is
    /// listed (the configuration never lists them with Xcode or
    /// LocalTesting, for one app or across apps, and if it did, the checks
    /// would win).
    package var checksSignatures: Bool { apps.contains { $0.environments.contains(where: \.checksSignatures) } }

    /// The app whose bundle id is `bundleID`.
    func app(bundleID: String?) -> AppPolicy? { apps.first { $0.bundleID == bundleID } }

    /// The policy `configuration` asks for, nil with Mode=none.
    package static func load(for configuration: Configuration) throws(ConfigurationError) -> SignedDataPolicy? {
        try VerificationSettings.checkCompleteness(of: configuration)
        let settings = configuration.verification
        let apps = configuration.apps.map { app in
            AppPolicy(name: app.name, bundleID: app.bundleID,
                      appAppleID: app.verification.environments.contains(.production) ? app.verification.appAppleID : nil,
                      environments: app.verification.environments)
        }.filter { !$0.environments.isEmpty }
        guard settings.mode == .appStore, !apps.isEmpty else { return nil }
        var roots: [RootCertificate] = [], receiptRoots: [RootCertificate] = []
        var receiptRootsMissing: String?
        if apps.contains(where: { $0.environments.contains(where: \.checksSignatures) }) {
            roots = try readRoots(settings.rootCertificateFile, key: "Verification.RootCertificateFile",
                                  name: "Apple Root CA - G3", file: "AppleRootCA-G3.cer",
                                  url: "https://www.apple.com/certificateauthority/AppleRootCA-G3.cer",
                                  configuration: configuration)
            let receiptKey = "Verification.ReceiptRootCertificateFile"
            let path = settings.receiptRootCertificateFile
            // Unset and not installed: StoreKit 2 data goes on being
            // verified, and receipts are refused with what to do.
            if configuration.origins[receiptKey] == nil, SystemCall.isMissing(path) {
                receiptRootsMissing = "\(path), Apple Inc. Root Certificate, is not installed, so no receipt can be "
                    + "verified; install txrecon's package, or set ReceiptRootCertificateFile= to a copy "
                    + "(Config/AppleIncRootCertificate.cer in the source tree)"
            } else {
                receiptRoots = try readRoots(path, key: receiptKey, name: "Apple Inc. Root Certificate",
                                             file: "AppleIncRootCertificate.cer",
                                             url: "https://www.apple.com/appleca/AppleIncRootCertificate.cer",
                                             configuration: configuration)
            }
        }
        return SignedDataPolicy(roots: roots, apps: apps, receiptRoots: receiptRoots,
                                receiptRootsMissing: receiptRootsMissing)
    }

    /// The roots in the file `key` names (`path`), or the configuration
    /// error that says what to do; `name` and `file` name the certificate
    /// and its copy in the source tree's Config/, `url` where Apple publishes it.
    private static func readRoots(_ path: String, key: String, name: String, file: String, url: String,
                                  configuration: Configuration) throws(ConfigurationError) -> [RootCertificate] {
        do {
            return try RootCertificate.read(path)
        } catch {
            let origin = configuration.origins[key]
            let setting = String(key.dropFirst("Verification.".count))
            var message = "\(path) \(error)"
            if error == .unreadable(.missing) {
                message += origin == nil
                    ? "; install txrecon's package, or set \(setting)= to a copy of \(name) (Config/\(file) in the "
                        + "source tree, or \(url))"
                    : "; set \(setting)= to the root certificate's path"
            }
            throw ConfigurationError(file: origin?.file ?? configuration.path, line: origin?.line, key: key,
                                     message: message)
        }
    }
}
