import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

/// A configuration whose secret files live in a fresh directory.
private struct SecretsFixture {
    let directory = TemporaryDirectory("txrecon-secrets")
    var configurationPath: String { "\(directory.path)/txrecon.conf" }
    var tokenPath: String { "\(directory.path)/token" }
    var signingSecretPath: String { "\(directory.path)/whsec" }
    var credentialsDirectory: String { "\(directory.path)/credentials" }

    /// Loads a configuration naming the token and signing secret files when
    /// asked to; the file keys sit on lines 3 and 4.
    func load(
        tokenFile: Bool = false, signingSecretFile: Bool = false, environment: [String: String] = [:]
    ) throws(ConfigurationError) -> BackendSecrets {
        directory.write("""
            [Backend]
            URL=https://backend.example/in
            \(tokenFile ? "BearerTokenFile=\(tokenPath)" : "# no token file")
            \(signingSecretFile ? "SigningSecretFile=\(signingSecretPath)" : "# no signing secret")

            """, to: "txrecon.conf")
        let configuration = try ConfigurationLoader.load(path: configurationPath)
        return try BackendSecrets.load(for: configuration, environment: environment)
    }

    func writeToken(_ text: String, mode: mode_t = 0o600) { directory.write(text, to: "token", mode: mode) }
    func writeSigningSecret(_ text: String, mode: mode_t = 0o600) { directory.write(text, to: "whsec", mode: mode) }
    func writeCredential(_ text: String, mode: mode_t = 0o400) {
        directory.write(text, to: "credentials/backend-token", mode: mode)
    }
}

/// whsec_ and the base64 of 24 bytes 0x01...0x18.
private let signingSecret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcY"

@Suite struct BackendSecretsLoadingTests {
    @Test func theTokenFileIsReadWithoutItsTrailingNewline() throws {
        let fixture = SecretsFixture()
        fixture.writeToken("tok-123.abc\n")
        #expect(try fixture.load(tokenFile: true).bearerToken == "tok-123.abc")
    }

    @Test func aCRLFEndingCountsAsOneNewline() throws {
        let fixture = SecretsFixture()
        fixture.writeToken("tok-123\r\n")
        #expect(try fixture.load(tokenFile: true).bearerToken == "tok-123")
    }

    @Test func onlyOneTrailingNewlineIsRemoved() {
        let fixture = SecretsFixture()
        fixture.writeToken("tok-123\n\n")
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(tokenFile: true) }
        #expect(error?.message.hasPrefix("the token file holds a space, a control character, a second line") == true)
    }

    @Test func aTokenWithASpaceIsRefusedWithoutQuotingIt() {
        let fixture = SecretsFixture()
        fixture.writeToken("Bearer tok-123\n")
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(tokenFile: true) }
        #expect(error?.key == "Backend.BearerTokenFile")
        #expect(error?.description.contains("tok-123") == false)
    }

    @Test func aTokenTooShortToBeRedactedIsRefused() throws {
        let fixture = SecretsFixture()
        fixture.writeToken("abc12\n")
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(tokenFile: true) }
        #expect(error?.key == "Backend.BearerTokenFile")
        #expect(error?.message.hasPrefix("the token has 5 characters, fewer than 6") == true, "\(String(describing: error))")
        #expect(error?.description.contains("abc12") == false)
        fixture.writeToken("abc123\n")
        #expect(try fixture.load(tokenFile: true).bearerToken == "abc123", "six is the redactor's shortest")
    }

    @Test func theSystemdCredentialIsUsedWhenNoTokenFileIsSet() throws {
        let fixture = SecretsFixture()
        fixture.writeCredential("from-credential\n")
        let secrets = try fixture.load(environment: ["CREDENTIALS_DIRECTORY": fixture.credentialsDirectory])
        #expect(secrets.bearerToken == "from-credential")
    }

    @Test func theTokenFileTakesPrecedenceOverTheCredential() throws {
        let fixture = SecretsFixture()
        fixture.writeToken("from-file")
        fixture.writeCredential("from-credential")
        let secrets = try fixture.load(
            tokenFile: true, environment: ["CREDENTIALS_DIRECTORY": fixture.credentialsDirectory])
        #expect(secrets.bearerToken == "from-file")
    }

    @Test func withoutTokenFileOrCredentialNoTokenIsSent() throws {
        let fixture = SecretsFixture()
        fixture.directory.makeDirectory("credentials")
        #expect(try fixture.load().bearerToken == nil)
        #expect(try fixture.load(environment: ["CREDENTIALS_DIRECTORY": fixture.credentialsDirectory]).bearerToken == nil)
    }

    @Test func anEmptyCredentialTheUnitsFallbackMakesMeansNoToken() throws {
        let fixture = SecretsFixture()
        fixture.writeCredential("\n")
        #expect(try fixture.load(environment: ["CREDENTIALS_DIRECTORY": fixture.credentialsDirectory]).bearerToken == nil)
    }

    @Test func aCredentialOthersCanReadIsRefusedOnTheConfigurationFile() {
        let fixture = SecretsFixture()
        fixture.writeCredential("from-credential", mode: 0o644)
        let error = #expect(throws: ConfigurationError.self) {
            try fixture.load(environment: ["CREDENTIALS_DIRECTORY": fixture.credentialsDirectory])
        }
        let credential = "\(fixture.credentialsDirectory)/backend-token"
        #expect(error == ConfigurationError(
            file: fixture.configurationPath, line: nil, key: "Backend.BearerTokenFile",
            message: "is not set, and the systemd credential backend-token cannot be used: "
                + "\(credential) is readable by every user (mode 0644); run \"chmod 0640 \(credential)\""))
    }

    @Test func aWorldReadableTokenFileIsRefusedWithTheChmodThatFixesIt() {
        let fixture = SecretsFixture()
        fixture.writeToken("tok", mode: 0o644)
        #expect(throws: ConfigurationError(
            file: fixture.configurationPath, line: 3, key: "Backend.BearerTokenFile",
            message: "\(fixture.tokenPath) is readable by every user (mode 0644); "
                + "run \"chmod 0640 \(fixture.tokenPath)\""
        )) { try fixture.load(tokenFile: true) }
    }

    @Test(arguments: [(mode_t(0o660), "0640"), (0o602, "0600"), (0o664, "0640"), (0o777, "0750")])
    func aTokenFileOthersCanWriteIsRefused(mode: mode_t, fix: String) {
        let fixture = SecretsFixture()
        fixture.writeToken("tok-123", mode: mode)
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(tokenFile: true) }
        #expect(error?.message.contains("is writable by other users") == true)
        #expect(error?.message.hasSuffix("run \"chmod \(fix) \(fixture.tokenPath)\"") == true)
    }

    @Test(arguments: [mode_t(0o400), 0o440, 0o600, 0o640])
    func aTokenFileReadableOnlyByOwnerAndGroupIsAccepted(mode: mode_t) throws {
        let fixture = SecretsFixture()
        fixture.writeToken("tok-123", mode: mode)
        #expect(try fixture.load(tokenFile: true).bearerToken == "tok-123")
    }

    @Test func aDirectoryInPlaceOfTheTokenFileIsRefused() {
        let fixture = SecretsFixture()
        fixture.directory.makeDirectory("token", mode: 0o700)
        #expect(throws: ConfigurationError(
            file: fixture.configurationPath, line: 3, key: "Backend.BearerTokenFile",
            message: "\(fixture.tokenPath) is a directory, not a regular file"
        )) { try fixture.load(tokenFile: true) }
    }

    @Test func aFIFOInPlaceOfTheTokenFileIsRefusedWithoutBlocking() {
        let fixture = SecretsFixture()
        #expect(mkfifo(fixture.tokenPath, 0o600) == 0)
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(tokenFile: true) }
        #expect(error?.message == "\(fixture.tokenPath) is a FIFO, not a regular file")
    }

    @Test func aMissingTokenFileIsAnErrorOnItsLine() {
        let fixture = SecretsFixture()
        #expect(throws: ConfigurationError(
            file: fixture.configurationPath, line: 3, key: "Backend.BearerTokenFile",
            message: "\(fixture.tokenPath) does not exist"
        )) { try fixture.load(tokenFile: true) }
    }

    @Test func anEmptyTokenFileIsRefused() {
        let fixture = SecretsFixture()
        fixture.writeToken("\n")
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(tokenFile: true) }
        #expect(error?.message == "\(fixture.tokenPath) is empty; write the secret into it")
    }

    @Test func theSigningSecretIsDecodedIntoTheWebhookKey() throws {
        let fixture = SecretsFixture()
        fixture.writeSigningSecret(signingSecret + "\n", mode: 0o640)
        let secrets = try fixture.load(signingSecretFile: true)
        #expect(secrets.webhookSigningKey == Array(1...24))
        #expect(secrets.bearerToken == nil)
    }

    @Test(arguments: [
        ("AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcY", "does not start with whsec_"),
        ("whsec_AQIDBAUGBwgJCgsM DQ4PEBESExQVFhcY", "the text after whsec_ is not standard base64"),
        ("whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhc-", "the text after whsec_ is not standard base64"),
        ("whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFg==", "the key is shorter than 24 bytes"),
    ])
    func aMalformedSigningSecretIsRefusedWithoutQuotingIt(content: String, reason: String) {
        let fixture = SecretsFixture()
        fixture.writeSigningSecret(content)
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(signingSecretFile: true) }
        #expect(error?.file == fixture.configurationPath)
        #expect(error?.line == 4)
        #expect(error?.key == "Backend.SigningSecretFile")
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "no error")")
        #expect(error?.description.contains("AQIDBAUGBwgJ") == false)
    }

    @Test func aSigningSecretFileOthersCanReadIsRefused() {
        let fixture = SecretsFixture()
        fixture.writeSigningSecret(signingSecret, mode: 0o604)
        let error = #expect(throws: ConfigurationError.self) { try fixture.load(signingSecretFile: true) }
        #expect(error?.message == "\(fixture.signingSecretPath) is readable by every user (mode 0604); "
            + "run \"chmod 0600 \(fixture.signingSecretPath)\"")
    }

    @Test func anErrorNamesTheDropInThatSetTheKey() {
        let fixture = SecretsFixture()
        fixture.writeToken("tok", mode: 0o644)
        let dropIn = fixture.directory.write(
            "[Backend]\nBearerTokenFile=\(fixture.tokenPath)\n", to: "txrecon.conf.d/50-token.conf")
        let error = #expect(throws: ConfigurationError.self) { try fixture.load() }
        #expect(error?.file == dropIn)
        #expect(error?.line == 2)
    }

    // MARK: TLS files and what is kept out of every output

    /// Loads `[Backend]` with `extra` lines after URL= (on line 3 on).
    private func load(_ fixture: SecretsFixture, url: String = "https://backend.example/in",
                      _ extra: String) throws(ConfigurationError) -> BackendSecrets {
        fixture.directory.write("[Backend]\nURL=\(url)\n\(extra)\n", to: "txrecon.conf")
        let configuration = try ConfigurationLoader.load(path: fixture.configurationPath)
        return try BackendSecrets.load(for: configuration, environment: [:])
    }

    @Test func aCAFileThatHoldsNoCertificateIsAConfigurationError() {
        let fixture = SecretsFixture()
        fixture.directory.write("not a certificate\n", to: "ca.pem")
        let error = #expect(throws: ConfigurationError.self) {
            try load(fixture, "CAFile=\(fixture.directory.path)/ca.pem")
        }
        #expect(error?.key == "Backend.CAFile" && error?.line == 3)
        #expect(error?.message.contains("holds no PEM certificates OpenSSL can read") == true)
        #expect(throws: Never.self) { try load(fixture, "CAFile=\(TestPKI.path("root"))") }
    }

    @Test func aCAFileLargerThanCurlTakesIsAConfigurationError() throws {
        let fixture = SecretsFixture()
        // A real bundle padded past curl's blob limit: valid PEM, too large.
        let root = String(decoding: try SystemCall.readFile(TestPKI.path("root"), limit: 65536), as: UTF8.self)
        let padding = String(repeating: "#\n", count: (BackendSecrets.maximumCABundleSize - root.utf8.count) / 2 + 1)
        fixture.directory.write(root + padding, to: "large.pem")
        let error = #expect(throws: ConfigurationError.self) {
            try load(fixture, "CAFile=\(fixture.directory.path)/large.pem")
        }
        #expect(error?.key == "Backend.CAFile" && error?.line == 3)
        #expect(error?.message.contains("is larger than \(BackendSecrets.maximumCABundleSize) bytes") == true)
    }

    @Test func aClientIdentityIsParsedItsKeyGuardedAndMatched() throws {
        let fixture = SecretsFixture()
        let key = String(decoding: try SystemCall.readFile(TestPKI.directory + "/leaf.key", limit: 65536), as: UTF8.self)
        fixture.directory.write(key, to: "client.key", mode: 0o640)
        let identity = "ClientCertificateFile=\(TestPKI.path("leaf"))\nClientKeyFile=\(fixture.directory.path)/client.key"
        let secrets = try load(fixture, identity)
        let bodyLine = try #require(key.split(separator: "\n").first { !$0.hasPrefix("-----") })
        #expect(secrets.redactable.contains(String(bodyLine)), "the key's lines are kept out of every output")
        // What libnats gets, read once here; printed, none of the key.
        #expect(secrets.tls.key.map { String(decoding: $0, as: UTF8.self).contains(String(bodyLine)) } == true)
        #expect(secrets.tls.certificate != nil)
        #expect(!"\(secrets.tls)".contains(String(bodyLine)) && !String(reflecting: secrets.tls).contains(String(bodyLine)))
        let options = NATSSession.Options(url: "tls://nats.example:4222", token: "tok-secret", requiresTLS: true,
                                          tls: secrets.tls, timeoutMilliseconds: 1000)
        #expect(!"\(options)".contains("tok-secret") && !"\(options)".contains(String(bodyLine)), "\(options)")

        fixture.directory.write(key, to: "client.key", mode: 0o644)
        let exposed = #expect(throws: ConfigurationError.self) { try load(fixture, identity) }
        #expect(exposed?.key == "Backend.ClientKeyFile" && exposed?.message.contains("readable by every user") == true)

        fixture.directory.write("garbage", to: "client.key", mode: 0o600)
        let garbage = #expect(throws: ConfigurationError.self) { try load(fixture, identity) }
        #expect(garbage?.message.contains("holds no PEM private key OpenSSL can read without a passphrase") == true)

        fixture.directory.write(key, to: "client.key", mode: 0o600)
        let other = "ClientCertificateFile=\(TestPKI.path("leaf-p384"))\nClientKeyFile=\(fixture.directory.path)/client.key"
        let mismatch = #expect(throws: ConfigurationError.self) { try load(fixture, other) }
        #expect(mismatch?.message.contains("is not the key of the certificate in") == true)

        fixture.directory.write("garbage", to: "client.pem", mode: 0o644)
        let badCertificate = "ClientCertificateFile=\(fixture.directory.path)/client.pem\n"
            + "ClientKeyFile=\(fixture.directory.path)/client.key"
        let unreadable = #expect(throws: ConfigurationError.self) { try load(fixture, badCertificate) }
        #expect(unreadable?.key == "Backend.ClientCertificateFile")
    }

    @Test func theTokenTheSigningSecretAndTheURLsQueryAreRedactable() throws {
        let fixture = SecretsFixture()
        fixture.writeToken("tok-123.abc\n")
        fixture.writeSigningSecret(signingSecret)
        let secrets = try load(fixture, url: "https://backend.example/in?key=q-secret-9",
                               "BearerTokenFile=\(fixture.tokenPath)\nSigningSecretFile=\(fixture.signingSecretPath)")
        #expect(Set(secrets.redactable).isSuperset(of: ["tok-123.abc", "key=q-secret-9", signingSecret,
                                                         String(signingSecret.dropFirst(6))]))
        var backend = BackendSettings()
        backend.url = "https://backend.example/in?key=q-secret-9#part"
        #expect(backend.displayURL == "https://backend.example/in?<redacted>")
        backend.url = "https://backend.example/in"
        #expect(backend.displayURL == "https://backend.example/in")
    }

    @Test func eachValueOfTheURLsQueryIsRedactableAloneAndDecoded() throws {
        let fixture = SecretsFixture()
        let url = "https://backend.example/in?source=txrecon&api_key=XYZ123%2F456;sig=a+b+c+d&t=Q29udGludWVkLXRva2Vu"
        let secrets = try load(fixture, url: url, "")
        let redactor = SecretRedactor(secrets.redactable)
        // What a backend says when it refuses one: the value alone, decoded.
        for echo in ["invalid api key XYZ123%2F456", "invalid api key XYZ123/456", "bad signature a b c d",
                     "unknown t Q29udGludWVkLXRva2Vu"] {
            #expect(redactor.redact(echo).contains("<redacted>"), "\(echo)")
            #expect(!redactor.redact(echo).contains("XYZ123") && !redactor.redact(echo).contains("Q29ud"), "\(echo)")
        }
        #expect(redactor.redact("txrecon show k") == "txrecon show k",
                "a short value of a parameter not named like a credential is no secret")
    }

    @Test func aURLThatIsRefusedIsQuotedWithoutItsQuery() {
        let fixture = SecretsFixture()
        let error = #expect(throws: ConfigurationError.self) {
            try load(fixture, url: "ftp://backend.example/in?key=q-secret-9", "")
        }
        #expect(error?.message.contains("q-secret-9") == false)
        #expect(error?.message.hasPrefix(#""ftp://backend.example/in?<redacted>" is not"#) == true)
    }
}
