// SignedDataPolicy: what App Store signed data must satisfy to be taken,
// built from the [Verification] section: the trusted roots (read from
// RootCertificateFile=), the bundle identifier, the App Apple ID and the
// environments.
//
// `load(for:)` runs at start-up, on reload and for check-config: it requires
// what Mode=appstore needs (VerificationSettings.checkCompleteness) and reads
// the root file; it throws a `ConfigurationError` naming the configuration
// file, line and key at fault. Commands that only read the spool (status,
// list) do not call it, so they work while [Verification] is incomplete.
// Blocks on disk I/O, like the configuration loader. Logs nothing.

/// The checks intake applies to every App Store signed string (Mode=appstore).
package struct SignedDataPolicy: Sendable, Equatable {
    /// The trust anchors; empty when the environments skip signature checks.
    package var roots: [RootCertificate]
    /// `bundleId` every transaction and notification must carry.
    package var bundleID: String
    /// `appAppleId` every Production notification must carry; nil unless
    /// Production is listed.
    package var appAppleID: Int64?
    /// The environments signed data may come from.
    package var environments: [SignedDataEnvironment]
    /// The roots StoreKit 1 receipts must chain to; empty when the
    /// environments skip signature checks, or when the default file is not
    /// installed (then `receiptRootsMissing` says so, and every receipt is
    /// refused with that sentence).
    package var receiptRoots: [RootCertificate]
    package var receiptRootsMissing: String?

    package init(roots: [RootCertificate], bundleID: String, appAppleID: Int64?, environments: [SignedDataEnvironment],
                receiptRoots: [RootCertificate] = [], receiptRootsMissing: String? = nil) {
        self.roots = roots
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environments = environments
        self.receiptRoots = receiptRoots
        self.receiptRootsMissing = receiptRootsMissing
    }

    /// Whether signatures are checked: whenever an App Store environment is
    /// listed (the configuration never lists them with Xcode or
    /// LocalTesting, and if it did, the checks would win).
    package var checksSignatures: Bool { environments.contains(where: \.checksSignatures) }

    /// The policy `configuration` asks for, nil with Mode=none.
    package static func load(for configuration: Configuration) throws(ConfigurationError) -> SignedDataPolicy? {
        try VerificationSettings.checkCompleteness(of: configuration)
        let settings = configuration.verification
        let environments = settings.environments
        guard settings.mode == .appStore, let bundleID = settings.bundleID, !environments.isEmpty else { return nil }
        var roots: [RootCertificate] = [], receiptRoots: [RootCertificate] = []
        var receiptRootsMissing: String?
        if environments.contains(where: \.checksSignatures) {
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
        return SignedDataPolicy(roots: roots, bundleID: bundleID,
                                appAppleID: environments.contains(.production) ? settings.appAppleID : nil,
                                environments: environments, receiptRoots: receiptRoots,
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
