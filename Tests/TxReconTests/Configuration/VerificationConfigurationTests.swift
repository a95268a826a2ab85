import Testing
import TxReconTestSupport
@testable import TxRecon

/// The [Verification] section: values, what Mode=appstore requires, the
/// root file, the warnings at start.
@Suite struct VerificationConfigurationTests {
    let directory = TemporaryDirectory("txrecon-verification")

    /// A configuration with `verification` as its [Verification] section
    /// (line 3 is the first line of it).
    func configuration(_ verification: String) throws -> Configuration {
        let path = directory.write("[Backend]\nURL=http://127.0.0.1:1/\n\(verification)", to: "txrecon.conf")
        return try ConfigurationLoader.load(path: path)
    }

    func policyError(_ verification: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ConfigurationError? {
        let loaded = try configuration(verification)
        return #expect(throws: ConfigurationError.self, sourceLocation: sourceLocation) {
            try SignedDataPolicy.load(for: loaded)
        }
    }

    @Test func theDefaultsAreAppStoreVerificationWithoutEnvelopes() throws {
        let settings = try configuration("").verification
        #expect(settings.mode == .appStore)
        #expect(settings.rootCertificateFile == "/usr/share/txrecon/AppleRootCA-G3.cer")
        #expect(settings.acceptEnvelopes == false)
        #expect(settings.bundleID == nil && settings.environments.isEmpty && settings.appAppleID == nil)
    }

    @Test func everyVerificationKeyIsRead() throws {
        let settings = try configuration("""
            [Verification]
            Mode=appstore
            RootCertificateFile=/etc/txrecon/roots.pem
            BundleID=com.example.app
            AppAppleID=1234567890
            Environment=Production
            AcceptEnvelopes=yes
            """).verification
        #expect(settings.rootCertificateFile == "/etc/txrecon/roots.pem")
        #expect(settings.bundleID == "com.example.app")
        #expect(settings.appAppleID == 1_234_567_890)
        #expect(settings.environments == [.production])
        #expect(settings.acceptEnvelopes)
    }

    @Test func severalEnvironmentsAreListedOnceEachInTheirOrder() throws {
        let settings = try configuration("[Verification]\nEnvironment=Production Sandbox Production").verification
        #expect(settings.environments == [.production, .sandbox])
    }

    @Test func unsignedEnvironmentsCannotBeListedWithAppStoreOnes() throws {
        for value in ["Production Xcode", "LocalTesting Sandbox"] {
            let error = #expect(throws: ConfigurationError.self) { try configuration("[Verification]\nEnvironment=\(value)") }
            #expect(error?.line == 4 && error?.key == "Verification.Environment", "\(value)")
            #expect(error?.message.contains("whose data carries no App Store signature") == true, "\(value)")
        }
        let testing = try configuration("[Verification]\nEnvironment=Xcode LocalTesting").verification
        #expect(testing.environments == [.xcode, .localTesting])
        #expect(testing.startWarning?.hasPrefix("[Verification] Environment=Xcode LocalTesting: signatures are not checked") == true)
    }

    @Test func anUnknownEnvironmentNamesItsLineAndTheChoices() throws {
        let error = #expect(throws: ConfigurationError.self) { try configuration("[Verification]\nEnvironment=sandbox") }
        #expect(error?.line == 4)
        #expect(error?.key == "Verification.Environment")
        #expect(error?.message.contains("Production, Sandbox, Xcode, LocalTesting") == true)
    }

    @Test func aBundleIDWithSpacesIsRefused() throws {
        let error = #expect(throws: ConfigurationError.self) { try configuration("[Verification]\nBundleID=com.example app") }
        #expect(error?.key == "Verification.BundleID")
    }

    @Test func anUnknownModeIsRefused() throws {
        let error = #expect(throws: ConfigurationError.self) { try configuration("[Verification]\nMode=apple") }
        #expect(error?.key == "Verification.Mode")
    }

    @Test func appStoreModeRequiresABundleID() throws {
        let error = try policyError("[Verification]\nEnvironment=Sandbox")
        #expect(error?.key == "Verification.BundleID")
        #expect(error?.message.contains("is required with Mode=appstore (the default)") == true)
        #expect(error?.file == directory.path + "/txrecon.conf")
    }

    @Test func appStoreModeRequiresAnEnvironment() throws {
        let error = try policyError("[Verification]\nBundleID=com.example.app")
        #expect(error?.key == "Verification.Environment")
    }

    @Test func productionRequiresAnAppAppleIDNamingTheEnvironmentLine() throws {
        let error = try policyError("[Verification]\nBundleID=com.example.app\nEnvironment=Production")
        #expect(error?.key == "Verification.AppAppleID")
        #expect(error?.line == 5)
    }

    @Test func modeNoneNeedsNothingElse() throws {
        #expect(try SignedDataPolicy.load(for: configuration("[Verification]\nMode=none")) == nil)
    }

    @Test func aMissingRootFileNamesTheKeyItsLineAndWhatToDo() throws {
        let error = try policyError("""
            [Verification]
            BundleID=com.example.app
            Environment=Sandbox
            RootCertificateFile=/nonexistent/root.cer
            """)
        #expect(error?.key == "Verification.RootCertificateFile")
        #expect(error?.line == 6)
        #expect(error?.message.hasPrefix("/nonexistent/root.cer does not exist") == true)
    }

    @Test func theDefaultRootFileWhenMissingSaysWhereToGetApplesRoot() throws {
        let loaded = try configuration("[Verification]\nBundleID=com.example.app\nEnvironment=Sandbox")
        let policy = Result { () throws(ConfigurationError) in try SignedDataPolicy.load(for: loaded) }
        // Installed by the package on some machines; when it is not, the error says how to get it.
        if case let .failure(error) = policy {
            #expect(error.message.contains("AppleRootCA-G3.cer") == true)
            #expect(error.line == nil)
        }
    }

    @Test func aPolicyCarriesTheRootsAndClaims() throws {
        let policy = try SignedDataPolicy.load(for: configuration("""
            [Verification]
            BundleID=com.example.app
            AppAppleID=99
            Environment=Sandbox
            RootCertificateFile=\(AppStoreSamples.directory)/AppleRootCA-G3.cer
            """))
        #expect(policy?.roots.map(\.subject) == ["C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3"])
        // Apple checks appAppleId in Production only.
        #expect(policy?.apps == [AppPolicy(name: "main", bundleID: "com.example.app", appAppleID: nil,
                                           environments: [.sandbox])])
    }

    @Test func xcodeNeedsNoRootFile() throws {
        let policy = try SignedDataPolicy.load(for: configuration("""
            [Verification]
            BundleID=com.example.app
            Environment=Xcode
            RootCertificateFile=/nonexistent/root.cer
            """))
        #expect(policy?.roots == [])
    }

    @Test func modeNoneAndXcodeAreWarnedAboutAtStart() throws {
        #expect(try configuration("[Verification]\nMode=none").verification.startWarning?.contains("Mode=none") == true)
        #expect(try configuration("[Verification]\nEnvironment=Xcode").verification.startWarning?
            .contains("Environment=Xcode: signatures are not checked") == true)
        #expect(try configuration("[Verification]\nEnvironment=Sandbox").verification.startWarning == nil)
    }

    @Test func checkConfigListsEachRootWithItsFingerprint() throws {
        let loaded = try configuration("""
            [Verification]
            BundleID=com.example.app
            Environment=Sandbox
            RootCertificateFile=\(AppStoreSamples.directory)/AppleRootCA-G3.pem
            """)
        let lines = ConfigurationSummary.lines(loaded, secrets: BackendSecrets(bearerToken: nil, webhookSigningKey: nil),
                                               verification: try SignedDataPolicy.load(for: loaded))
        #expect(lines.contains("Root: C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3 "
            + "SHA-256 \(RootCertificateTests.appleFingerprint)"))
        #expect(lines.contains("BundleID=com.example.app"))
    }
}
