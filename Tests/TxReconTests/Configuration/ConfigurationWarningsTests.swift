// Values that are legal but almost certainly wrong are said, never refused.
import Testing
@testable import TxRecon

@Suite struct ConfigurationWarningsTests {
    func configuration(url: String = "https://backend.example/in", timeout: Duration = .seconds(10)) -> Configuration {
        var configuration = Configuration(path: "/etc/txrecon/txrecon.conf")
        configuration.backend.url = url
        configuration.backend.timeout = timeout
        configuration.verification.bundleID = "com.example.app"
        configuration.verification.environments = [.sandbox]
        return configuration
    }

    @Test func aTimeoutUnderOneHundredMillisecondsIsWarnedAbout() {
        let warnings = ConfigurationWarnings.daemon(configuration(timeout: .milliseconds(50)), secrets: BackendSecrets())
        #expect(warnings == ["[Backend] Timeout=50ms is under 100ms: almost every attempt will time out and be "
                             + "retried; the default is 10s"])
        #expect(ConfigurationWarnings.daemon(configuration(timeout: .milliseconds(100)), secrets: BackendSecrets()).isEmpty)
    }

    @Test func secretsOverPlainHTTPAreWarnedAboutUnlessTheHostIsLoopback() {
        let token = BackendSecrets(bearerToken: "tok")
        let remote = ConfigurationWarnings.daemon(configuration(url: "http://backend.example/in"), secrets: token)
        #expect(remote.count == 1 && remote[0].hasPrefix("[Backend] URL= is plain http:// to backend.example: the bearer token"))
        let signed = ConfigurationWarnings.daemon(configuration(url: "http://10.0.0.5/in"),
                                                  secrets: BackendSecrets(webhookSigningKey: [1, 2, 3]))
        #expect(signed.first?.contains("signed requests") == true)
        for url in ["http://127.0.0.1:8080/in", "http://localhost/in", "http://[::1]/in", "https://backend.example/in"] {
            #expect(ConfigurationWarnings.daemon(configuration(url: url), secrets: token).isEmpty, "\(url)")
        }
        #expect(ConfigurationWarnings.daemon(configuration(url: "http://backend.example/in"), secrets: BackendSecrets()).isEmpty,
                "nothing secret is sent")
        #expect(ConfigurationWarnings.daemon(configuration(url: "http://127.billing.example/in"), secrets: token).count == 1,
                "a name that starts with 127. is no loopback address")
    }

    @Test func tlsFilesForAPlainHTTPBackendAreWarnedAbout() {
        var settings = configuration(url: "http://10.0.0.5/in")
        settings.backend.clientCertificateFile = "/etc/txrecon/client.pem"
        settings.backend.clientKeyFile = "/etc/txrecon/client.key"
        let warnings = ConfigurationWarnings.daemon(settings, secrets: BackendSecrets())
        #expect(warnings == ["[Backend] ClientCertificateFile= set, but URL= is plain http://: no TLS is made, so it "
                             + "is not used; use https://"])
        settings.backend.url = "https://10.0.0.5/in"
        #expect(ConfigurationWarnings.daemon(settings, secrets: BackendSecrets()).isEmpty)
    }

    @Test func aTokenOverNatsToAnotherHostIsWarnedAboutButNotOverTLS() {
        let token = BackendSecrets(bearerToken: "tok")
        let remote = ConfigurationWarnings.daemon(configuration(url: "nats://nats.example:4222"), secrets: token)
        #expect(remote == ["[Backend] URL= is nats:// to nats.example: the token and every transaction cross the "
                           + "network unencrypted unless the server insists on TLS; use tls:// to require it"])
        for url in ["tls://nats.example:4222", "nats://127.0.0.1:4222"] {
            #expect(ConfigurationWarnings.daemon(configuration(url: url), secrets: token).isEmpty, "\(url)")
        }
        #expect(ConfigurationWarnings.daemon(configuration(url: "nats://nats.example:4222"), secrets: BackendSecrets())
            .isEmpty, "no token")
    }

    @Test func receiptPurchasesTakenWithoutTheirReceiptAreWarnedAbout() {
        var purchasesOnly = configuration()
        purchasesOnly.match.kinds = [.transaction, .receipt]
        let warnings = ConfigurationWarnings.daemon(purchasesOnly, secrets: BackendSecrets())
        #expect(warnings.count == 1 && warnings[0].contains("no destination takes their receipts (appstore.receipt-file)"),
                "\(warnings)")
        var both = configuration()
        both.match.kinds = [.receipt, .receiptFile]
        #expect(ConfigurationWarnings.daemon(both, secrets: BackendSecrets()).isEmpty)
        #expect(ConfigurationWarnings.daemon(configuration(), secrets: BackendSecrets()).isEmpty, "every kind")
    }

    @Test func aPlainHTTPSweepBaseURLIsWarnedAbout() {
        var sweep = SweepSettings()
        #expect(ConfigurationWarnings.sweep(sweep).isEmpty, "Apple's https:// default")
        sweep.baseURL = "http://proxy.example"
        #expect(ConfigurationWarnings.sweep(sweep).first?.hasPrefix("[Sweep] BaseURL= is plain http:// to proxy.example") == true)
        sweep.baseURL = "http://127.0.0.1:9000"
        #expect(ConfigurationWarnings.sweep(sweep).isEmpty)
    }

    @Test func aPaceAboveTheSandboxsLimitIsWarnedAboutAgainstApplesSandboxOnly() {
        var sweep = SweepSettings()
        sweep.maxRequestsPerSecond = 50
        #expect(ConfigurationWarnings.sweep(sweep).isEmpty, "production allows 50 a second")
        sweep.environment = .sandbox
        #expect(ConfigurationWarnings.sweep(sweep).first?.hasPrefix("[Sweep] MaxRequestsPerSecond=50 is above the "
                                                                    + "sandbox's limit of 5 a second") == true)
        sweep.maxRequestsPerSecond = 5
        #expect(ConfigurationWarnings.sweep(sweep).isEmpty)
        sweep.maxRequestsPerSecond = 50
        sweep.baseURL = "http://127.0.0.1:9000"
        #expect(ConfigurationWarnings.sweep(sweep).isEmpty, "a stand-in of one's own has limits of its own")
    }

    @Test func theVerificationWarningIsAmongThem() {
        var unchecked = configuration()
        unchecked.verification.mode = .none
        #expect(ConfigurationWarnings.daemon(unchecked, secrets: BackendSecrets()).first?.hasPrefix("[Verification] Mode=none") == true)
    }
}
