import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct SweepSettingsTests {
    private let directory = TemporaryDirectory()

    private func load(_ sweep: String) throws -> Configuration {
        let path = directory.write("[Backend]\nURL=http://127.0.0.1:1/\n[Sweep]\n\(sweep)\n", to: "txrecon.conf")
        return try ConfigurationLoader.load(path: path)
    }

    @Test func aConfigurationWithoutSweepKeysLoadsWithTheDefaults() throws {
        let sweep = try load("").sweep
        #expect(sweep == SweepSettings())
        #expect(sweep.environment == .production && sweep.effectiveBaseURL == "https://api.storekit.apple.com")
        #expect(sweep.window == .seconds(86_400) && sweep.overlap == .seconds(3600) && sweep.maxRequestsPerSecond == 5)
    }

    @Test func theSandboxHasItsOwnServerUnlessBaseURLIsSet() throws {
        #expect(try load("Environment=Sandbox").sweep.effectiveBaseURL == "https://api.storekit-sandbox.apple.com")
        #expect(try load("Environment=Sandbox\nBaseURL=http://127.0.0.1:8443").sweep.effectiveBaseURL
            == "http://127.0.0.1:8443")
    }

    @Test func anEnvironmentSpelledInAnotherCaseIsRefusedWithTheRightSpelling() {
        #expect(throws: ConfigurationError(file: directory.path + "/txrecon.conf", line: 4, key: "Sweep.Environment",
                                           message: "\"sandbox\" is not an environment; write Sandbox (as Apple spells it)")) {
            try load("Environment=sandbox")
        }
    }

    @Test func aWindowShorterThanAMinuteIsRefused() {
        #expect(throws: ConfigurationError.self) { try load("Window=30s") }
    }

    @Test func anIdentifierWithASpaceIsRefused() {
        #expect(throws: ConfigurationError.self) { try load("BundleID=com.example app") }
    }

    @Test func checkConfigShowsTheSweepSectionOnlyWhenSomethingInItIsSet() throws {
        let secrets = BackendSecrets()
        #expect(!ConfigurationSummary.lines(try load(""), secrets: secrets, verification: nil).contains("[Sweep]"))
        let lines = ConfigurationSummary.lines(try load("KeyID=KEY123"), secrets: secrets, verification: nil)
        #expect(lines.contains("[Sweep]") && lines.contains("KeyID=KEY123")
            && lines.contains("PrivateKey: from credential appstore-key"))
    }
}
