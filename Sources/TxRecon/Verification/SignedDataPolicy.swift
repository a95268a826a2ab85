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
public struct SignedDataPolicy: Sendable, Equatable {
    /// The trust anchors; empty when the environments skip signature checks.
    public var roots: [RootCertificate]
    /// `bundleId` every transaction and notification must carry.
    public var bundleID: String
    /// `appAppleId` every Production notification must carry; nil unless
    /// Production is listed.
    public var appAppleID: Int64?
    /// The environments signed data may come from.
    public var environments: [SignedDataEnvironment]

    public init(roots: [RootCertificate], bundleID: String, appAppleID: Int64?, environments: [SignedDataEnvironment]) {
        self.roots = roots
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environments = environments
    }

    /// Whether signatures are checked: whenever an App Store environment is
    /// listed (the configuration never lists them with Xcode or
    /// LocalTesting, and if it did, the checks would win).
    public var checksSignatures: Bool { environments.contains(where: \.checksSignatures) }

    /// The policy `configuration` asks for, nil with Mode=none.
    public static func load(for configuration: Configuration) throws(ConfigurationError) -> SignedDataPolicy? {
        try VerificationSettings.checkCompleteness(of: configuration)
        let settings = configuration.verification
        let environments = settings.environments
        guard settings.mode == .appStore, let bundleID = settings.bundleID, !environments.isEmpty else { return nil }
        var roots: [RootCertificate] = []
        if environments.contains(where: \.checksSignatures) {
            let path = settings.rootCertificateFile
            do {
                roots = try RootCertificate.read(path)
            } catch {
                let key = "Verification.RootCertificateFile"
                let origin = configuration.origins[key]
                var message = "\(path) \(error)"
                if error == .unreadable(.missing) {
                    message += origin == nil
                        ? "; install txrecon's package, or set RootCertificateFile= to a copy of Apple Root CA - G3 "
                            + "(Config/AppleRootCA-G3.cer in the source tree, or "
                            + "https://www.apple.com/certificateauthority/AppleRootCA-G3.cer)"
                        : "; set RootCertificateFile= to the root certificate's path"
                }
                throw ConfigurationError(file: origin?.file ?? configuration.path, line: origin?.line, key: key,
                                         message: message)
            }
        }
        return SignedDataPolicy(roots: roots, bundleID: bundleID,
                                appAppleID: environments.contains(.production) ? settings.appAppleID : nil,
                                environments: environments)
    }
}
