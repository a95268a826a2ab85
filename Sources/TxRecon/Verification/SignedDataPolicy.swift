// SignedDataPolicy: what App Store signed data must satisfy to be taken,
// built from the [Verification] section: the trusted roots (read from
// RootCertificateFile=), the bundle identifier, the App Apple ID and the
// environment.
//
// `load(for:)` runs at start-up, on reload and for check-config: it requires
// what Mode=appstore needs (VerificationSettings.checkCompleteness) and reads
// the root file; it throws a `ConfigurationError` naming the configuration
// file, line and key at fault. Commands that only read the spool (status,
// list) do not call it, so they work while [Verification] is incomplete.
// Blocks on disk I/O, like the configuration loader. Logs nothing.

/// The checks intake applies to every App Store signed string (Mode=appstore).
public struct SignedDataPolicy: Sendable, Equatable {
    /// The trust anchors; empty when `environment` skips signature checks.
    public var roots: [RootCertificate]
    /// `bundleId` every transaction and notification must carry.
    public var bundleID: String
    /// `appAppleId` every Production notification must carry; nil outside Production.
    public var appAppleID: Int64?
    public var environment: SignedDataEnvironment

    public init(roots: [RootCertificate], bundleID: String, appAppleID: Int64?, environment: SignedDataEnvironment) {
        self.roots = roots
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
    }

    /// The policy `configuration` asks for, nil with Mode=none.
    public static func load(for configuration: Configuration) throws(ConfigurationError) -> SignedDataPolicy? {
        try VerificationSettings.checkCompleteness(of: configuration)
        let settings = configuration.verification
        guard settings.mode == .appStore, let bundleID = settings.bundleID, let environment = settings.environment else {
            return nil
        }
        var roots: [RootCertificate] = []
        if environment.checksSignatures {
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
                                appAppleID: environment == .production ? settings.appAppleID : nil,
                                environment: environment)
    }
}
