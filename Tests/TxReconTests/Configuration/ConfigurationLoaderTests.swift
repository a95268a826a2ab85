import Testing
import TxReconTestSupport
@testable import TxRecon

/// A configuration file (and drop-ins) written to a fresh directory.
private struct ConfigurationFiles {
    let directory = TemporaryDirectory("txrecon-config")
    var path: String { "\(directory.path)/txrecon.conf" }

    init(_ main: String, dropIns: [String: String] = [:]) {
        directory.write(main, to: "txrecon.conf")
        for (name, text) in dropIns { directory.write(text, to: "txrecon.conf.d/\(name)") }
    }

    func load() throws(ConfigurationError) -> Configuration {
        try ConfigurationLoader.load(path: path)
    }

    /// The error loading gives; records a test failure when it succeeds.
    func loadError(sourceLocation: SourceLocation = #_sourceLocation) -> ConfigurationError? {
        #expect(throws: ConfigurationError.self, sourceLocation: sourceLocation) { try load() }
    }
}

private let minimal = """
    [Backend]
    URL=https://backend.example/transactions
    """

@Suite struct ConfigurationLoaderTests {
    @Test func aFileWithOnlyTheURLGivesTheDocumentedDefaults() throws {
        let files = ConfigurationFiles(minimal)
        let configuration = try files.load()
        var expected = Configuration(path: files.path)
        expected.backend.url = "https://backend.example/transactions"
        expected.origins = ["Backend.URL": ConfigurationOrigin(file: files.path, line: 2)]
        expected.files = [ConfigurationFile(path: files.path, permissions: 0o600)]
        #expect(configuration == expected)
    }

    @Test func everyKeyIsReadIntoItsSetting() throws {
        let configuration = try ConfigurationFiles("""
            [Spool]
            Directory=/srv/spool
            MaxFileSize=512K
            DoneRetention=0
            LedgerFile=/srv/state/ledger.sqlite3
            LedgerRetention=400d
            [Backend]
            URL=https://[::1]:8080/in?source=txrecon
            Timeout=1min 30s
            HTTPVersion=2
            BearerTokenFile=/etc/txrecon/token
            SigningSecretFile=/etc/txrecon/whsec
            CAFile=/etc/txrecon/ca.pem
            ClientCertificateFile=/etc/txrecon/client.pem
            ClientKeyFile=/etc/txrecon/client.key
            ProbeDelays=500ms 3s
            MaxRate=0.5
            [Delivery]
            RetryDelays=1s 1min30s 1h
            MaxConcurrentDeliveries=64
            [Match]
            Environment=Production Sandbox
            Kind=appstore.notification appstore.transaction
            NotificationType=REFUND DID_RENEW
            App=main
            [Verification]
            Mode=none
            RootCertificateFile=/etc/txrecon/roots.pem
            ReceiptRootCertificateFile=/etc/txrecon/receipt-roots.pem
            BundleID=com.example.app
            AppAppleID=1234567890
            Environment=LocalTesting
            AcceptEnvelopes=on
            [Metrics]
            TextfileDirectory=/var/lib/prometheus/node-exporter
            [Sweep]
            Environment=Sandbox
            BundleID=com.example.app
            IssuerID=57246542-96fe-1a63-e053-0824d011072a
            KeyID=2X9R4HXF34
            PrivateKeyFile=/etc/txrecon/appstore-key.p8
            BaseURL=http://127.0.0.1:8443
            Window=6h
            Overlap=0
            MaxRequestsPerSecond=50
            [Reconcile]
            FullCycle=3d
            [Outbox]
            FinishTransactions=yes
            AnswersFrom=backend
            ConsumptionDeadlineWarning=2h
            [Receive]
            Listen=[::1]:8443
            UploadTokenFile=/etc/txrecon/upload-token
            MaxConnections=10
            MaxConnectionsPerAddress=2
            IdleTimeout=5s
            RequestTimeout=10s
            MaxRequestsPerSecondPerAddress=0
            MaxInboxFiles=50
            RejectedQuota=7
            """).load()
        #expect(configuration.spool.directory == "/srv/spool")
        #expect(configuration.spool.maxFileSize == 512 * 1024)
        #expect(configuration.spool.doneRetention == .zero)
        #expect(configuration.spool.ledgerFile == "/srv/state/ledger.sqlite3")
        #expect(configuration.spool.ledgerRetention == .seconds(400 * 86_400))
        #expect(configuration.backend.url == "https://[::1]:8080/in?source=txrecon")
        #expect(configuration.backend.timeout == .seconds(90))
        #expect(configuration.backend.httpVersion == .http2)
        #expect(configuration.backend.bearerTokenFile == "/etc/txrecon/token")
        #expect(configuration.backend.signingSecretFile == "/etc/txrecon/whsec")
        #expect(configuration.backend.caFile == "/etc/txrecon/ca.pem")
        #expect(configuration.backend.clientCertificateFile == "/etc/txrecon/client.pem")
        #expect(configuration.backend.clientKeyFile == "/etc/txrecon/client.key")
        #expect(configuration.backend.probeSchedule.delays == [.milliseconds(500), .seconds(3)])
        #expect(configuration.backend.maxRate == 0.5)
        #expect(configuration.delivery.retrySchedule.delays == [.seconds(1), .seconds(90), .seconds(3600)])
        #expect(configuration.delivery.maxConcurrentDeliveries == 64)
        #expect(configuration.match.environments == ["Production", "Sandbox"])
        #expect(configuration.match.kinds == [.notification, .transaction])
        #expect(configuration.match.notificationTypes == ["REFUND", "DID_RENEW"])
        #expect(configuration.match.apps == ["main"] && configuration.match.appBundleIDs == ["com.example.app"])
        #expect(configuration.verification.mode == .none)
        #expect(configuration.verification.rootCertificateFile == "/etc/txrecon/roots.pem")
        #expect(configuration.verification.receiptRootCertificateFile == "/etc/txrecon/receipt-roots.pem")
        #expect(configuration.verification.bundleID == "com.example.app")
        #expect(configuration.verification.appAppleID == 1_234_567_890)
        #expect(configuration.verification.environments == [.localTesting])
        #expect(configuration.verification.acceptEnvelopes)
        #expect(configuration.metrics.textfileDirectory == "/var/lib/prometheus/node-exporter")
        let sweep = configuration.sweep
        #expect(sweep.environment == .sandbox && sweep.bundleID == "com.example.app")
        #expect(sweep.issuerID == "57246542-96fe-1a63-e053-0824d011072a" && sweep.keyID == "2X9R4HXF34")
        #expect(sweep.privateKeyFile == "/etc/txrecon/appstore-key.p8" && sweep.baseURL == "http://127.0.0.1:8443")
        #expect(sweep.window == .seconds(6 * 3600) && sweep.overlap == .zero && sweep.maxRequestsPerSecond == 50)
        #expect(configuration.reconcile.fullCycle == .seconds(3 * 86_400))
        #expect(configuration.outbox.finishTransactions && configuration.outbox.answersFrom == "backend")
        #expect(configuration.outbox.consumptionDeadlineWarning == .seconds(2 * 3600))
        let receive = configuration.receive
        #expect(receive.listen == ListenAddress(host: "::1", port: 8443) && receive.listen.description == "[::1]:8443")
        #expect(receive.uploadTokenFile == "/etc/txrecon/upload-token")
        #expect(receive.maxConnections == 10 && receive.maxConnectionsPerAddress == 2)
        #expect(receive.idleTimeout == .seconds(5) && receive.requestTimeout == .seconds(10))
        #expect(receive.maxRequestsPerSecondPerAddress == 0 && receive.maxInboxFiles == 50 && receive.rejectedQuota == 7)
        // Subject= and Stream= belong to a nats:// URL, not this one's
        // (StreamDestinationConfigurationTests reads them).
        let streamOnly: Set = ["Backend.Subject", "Backend.Stream"]
        #expect(Set(configuration.origins.keys) == Set(ConfigurationKey.all.map(\.qualifiedName)).subtracting(streamOnly))
    }

    @Test func commentsBlankLinesSurroundingSpaceAndCRLFAreIgnored() throws {
        let configuration = try ConfigurationFiles(
            "# comment\r\n\r\n; another\r\n  [Backend]  \r\n\t URL = https://a.example/x \t\r\n  # indented\r\n"
        ).load()
        #expect(configuration.backend.url == "https://a.example/x")
    }

    @Test func dropInsApplyAfterTheMainFileInNameOrder() throws {
        let files = ConfigurationFiles(minimal + "\n[Delivery]\nMaxConcurrentDeliveries=2\n", dropIns: [
            "20-b.conf": "[Delivery]\nMaxConcurrentDeliveries=8\n",
            "10-a.conf": "[Delivery]\nMaxConcurrentDeliveries=6\n[Backend]\nTimeout=30s\n",
        ])
        let configuration = try files.load()
        #expect(configuration.delivery.maxConcurrentDeliveries == 8)
        #expect(configuration.backend.timeout == .seconds(30))
        #expect(configuration.origins["Delivery.MaxConcurrentDeliveries"]
            == ConfigurationOrigin(file: "\(files.path).d/20-b.conf", line: 2))
    }

    @Test func dropInDirectoryFilesNotEndingInConfOrHiddenAreIgnored() throws {
        let configuration = try ConfigurationFiles(minimal, dropIns: [
            "10-a.conf.bak": "[Nonsense]\n",
            ".20-hidden.conf": "[Nonsense]\n",
            "README": "not a configuration file\n",
        ]).load()
        #expect(configuration.backend.url == "https://backend.example/transactions")
    }

    @Test func anEmptyAssignmentResetsTheKeyToItsDefault() throws {
        let configuration = try ConfigurationFiles(minimal + "\nTimeout=30s\nBearerTokenFile=/etc/t\n", dropIns: [
            "50-reset.conf": "[Backend]\nTimeout=\nBearerTokenFile=\n",
        ]).load()
        #expect(configuration.backend.timeout == .seconds(10))
        #expect(configuration.backend.bearerTokenFile == nil)
        #expect(configuration.origins["Backend.Timeout"] == nil)
        #expect(configuration.origins["Backend.BearerTokenFile"] == nil)
    }

    @Test func anEmptyRetryDelaysRestoresTheStandardSchedule() throws {
        let configuration = try ConfigurationFiles(minimal + "\n[Delivery]\nRetryDelays=1s\nRetryDelays=\n").load()
        #expect(configuration.delivery.retrySchedule == .standard)
    }

    /// libmicrohttpd counts it in whole seconds: a fraction would silently change.
    @Test(arguments: ["500ms", "1.9s"])
    func anIdleTimeoutOfAFractionOfASecondIsRefusedAtItsLine(value: String) {
        let files = ConfigurationFiles(minimal + "\n[Receive]\nIdleTimeout=\(value)\n")
        let error = files.loadError()
        #expect(error?.key == "Receive.IdleTimeout" && error?.line == 4 && error?.message.contains("whole seconds") == true,
                "\(String(describing: error))")
    }

    @Test func anIdleTimeoutNotShorterThanTheRequestTimeoutIsRefusedAtItsLine() {
        let files = ConfigurationFiles(minimal + "\n[Receive]\nIdleTimeout=30s\n")
        let error = files.loadError()
        #expect(error?.key == "Receive.IdleTimeout" && error?.line == 4, "\(String(describing: error))")
        #expect(error?.message.contains("must be shorter than RequestTimeout=") == true)
        #expect(throws: Never.self) { try ConfigurationFiles(minimal + "\n[Receive]\nIdleTimeout=29s\n").load() }
    }

    @Test func aMissingMainFileIsAnError() {
        let directory = TemporaryDirectory()
        let path = "\(directory.path)/absent.conf"
        #expect(throws: ConfigurationError(
            file: path, line: nil, key: nil,
            message: "does not exist; create it from the sample txrecon.conf or pass --config PATH"
        )) { try ConfigurationLoader.load(path: path) }
    }

    @Test func aDirectoryInPlaceOfADropInIsAnError() {
        let files = ConfigurationFiles(minimal)
        files.directory.makeDirectory("txrecon.conf.d/10-x.conf")
        let error = files.loadError()
        #expect(error?.file == "\(files.path).d/10-x.conf")
        #expect(error?.message == "is a directory, not a regular file")
    }

    @Test func anUnknownSectionIsAnErrorOnItsHeaderLine() {
        let files = ConfigurationFiles(minimal + "\n\n[Monitoring]\n")
        #expect(files.loadError() == ConfigurationError(
            file: files.path, line: 4, key: nil,
            message: "unknown section [Monitoring]; the sections are [Spool], [Backend], [Delivery], [Match], [Verification], "
                + "[Metrics], [Sweep], [Reconcile], [Outbox], [Receive]"))
    }

    @Test func anUnknownKeyNamesItsSectionAndTheKeysAccepted() {
        let files = ConfigurationFiles("[Spool]\nDirectory=/srv\nMaxSize=1M\n" + minimal)
        #expect(files.loadError() == ConfigurationError(
            file: files.path, line: 3, key: "Spool.MaxSize",
            message: "unknown key; [Spool] accepts Directory=, MaxFileSize=, DoneRetention=, LedgerFile=, "
                + "LedgerRetention="))
    }

    @Test func aSecretWrittenWhereAKeyOrAPathGoesIsNotRepeated() {
        // A Standard Webhooks secret alone on a line: the text before its
        // padding's = reads as a key name. A token written in place of the
        // path of the file that should hold it.
        for (line, secret) in [("whsec_K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN"),
                               ("BearerTokenFile=sk_live_51HxYz0a9", "sk_live_51HxYz0a9"),
                               ("URL=https://svc:hunter2 x@backend.example/tx", "hunter2"),
                               ("URL=https://svc:pa/ss#wo?rd@backend.example/tx x", "ss#wo")] {
            let files = ConfigurationFiles("[Backend]\nURL=https://a.example/\n\(line)\n")
            let error = files.loadError()
            #expect(error?.line == 3, "\(line)")
            #expect(error?.description.contains(secret) == false, "\(error?.description ?? "no error")")
        }
        let beforeSection = ConfigurationFiles("abc_123-secret=\n" + minimal).loadError()
        #expect(beforeSection?.message == "a setting comes before any [Section] header; put it under its section header")
    }

    @Test func tenYearsIsTheLongestSpanAndIsAccepted() throws {
        let configuration = try ConfigurationFiles(minimal + "\n[Spool]\nDoneRetention=10y\n").load()
        #expect(configuration.spool.doneRetention == SettingValue.longestTimeSpan)
    }

    @Test func aRequiredKeyEmptiedInADropInIsBlamedOnThatLine() {
        let files = ConfigurationFiles(minimal, dropIns: ["10-x.conf": "[Backend]\nURL=\n"])
        let error = files.loadError()
        #expect(error?.file == "\(files.path).d/10-x.conf" && error?.line == 2 && error?.key == "Backend.URL",
                "\(error?.description ?? "no error")")
    }

    @Test func aKeyInTheWrongSectionPointsToItsSection() {
        let files = ConfigurationFiles("[Spool]\nTimeout=5s\n" + minimal)
        #expect(files.loadError()?.message == "unknown key; Timeout= belongs under [Backend]")
    }

    @Test func keysAreCaseSensitive() {
        let files = ConfigurationFiles("[Backend]\nurl=https://a.example/\n")
        let error = files.loadError()
        #expect(error?.key == "Backend.url")
        #expect(error?.message == "unknown key; keys are case-sensitive: write URL=")
    }

    @Test func aKeyBeforeAnySectionIsAnError() {
        let files = ConfigurationFiles("# settings\nURL=https://a.example/\n" + minimal)
        #expect(files.loadError() == ConfigurationError(
            file: files.path, line: 2, key: nil,
            message: "URL= comes before any [Section] header; put it under [Backend]"))
    }

    @Test func aMalformedLineIsAnErrorOnItsLine() {
        let files = ConfigurationFiles(minimal + "\n\nTimeout 10s\n")
        let error = files.loadError()
        #expect(error?.file == files.path)
        #expect(error?.line == 4)
        #expect(error?.message.hasPrefix("malformed line; expected a [Section] header, a Key=value") == true)
    }

    @Test(arguments: ["[Backend", "[]", "[Backend] x", "=value"])
    func malformedHeadersAndKeylessAssignmentsAreErrors(line: String) {
        let files = ConfigurationFiles(minimal + "\n" + line + "\n")
        #expect(files.loadError()?.line == 3)
    }

    @Test func aLineThatIsNotUTF8IsAnErrorOnItsLine() {
        let files = ConfigurationFiles(minimal)
        files.directory.write(Array((minimal + "\n#").utf8) + [0xC3, 0x28, 0x0A], to: "txrecon.conf")
        #expect(files.loadError() == ConfigurationError(
            file: files.path, line: 3, key: nil, message: "is not valid UTF-8 text"))
    }

    @Test func anErrorInADropInNamesTheDropInAndItsLine() {
        let files = ConfigurationFiles(minimal, dropIns: ["10-x.conf": "# tuning\n[Delivery]\nMaxConcurrentDeliveries=0\n"])
        let error = files.loadError()
        #expect(error?.description
            == "\(files.path).d/10-x.conf:3: Delivery.MaxConcurrentDeliveries: \"0\" is not between 1 and 64")
    }

    @Test func aMissingURLIsAnErrorWithoutALine() {
        let files = ConfigurationFiles("[Delivery]\nMaxConcurrentDeliveries=2\n")
        let error = files.loadError()
        #expect(error?.file == files.path)
        #expect(error?.line == nil)
        #expect(error?.key == "Backend.URL")
    }

    @Test func aURLEmptiedByADropInIsMissing() {
        let files = ConfigurationFiles(minimal, dropIns: ["10-x.conf": "[Backend]\nURL=\n"])
        #expect(files.loadError()?.key == "Backend.URL")
    }

    @Test func aClientCertificateWithoutAKeyIsAnErrorOnItsLine() {
        let files = ConfigurationFiles(minimal + "\nClientCertificateFile=/etc/txrecon/c.pem\n")
        #expect(files.loadError() == ConfigurationError(
            file: files.path, line: 3, key: "Backend.ClientCertificateFile",
            message: "is set but ClientKeyFile= is not; mutual TLS needs both or neither"))
    }

    @Test func aClientKeyWithoutACertificateIsAnErrorOnItsLine() {
        let files = ConfigurationFiles(minimal + "\nClientKeyFile=/etc/txrecon/c.key\n")
        let error = files.loadError()
        #expect(error?.key == "Backend.ClientKeyFile")
        #expect(error?.line == 3)
    }

    @Test(arguments: [
        ("Spool", "Directory", "var/spool", "is not an absolute path; write it starting with /"),
        ("Spool", "MaxFileSize", "1X", #""1X" is not a size such as "4096""#),
        ("Spool", "MaxFileSize", "0", #""0" is not between 1 and 1G"#),
        ("Spool", "MaxFileSize", "2G", #""2G" is not between 1 and 1G"#),
        ("Spool", "DoneRetention", "3 days ago", #""3 days ago" is not a time span such as "30s""#),
        ("Spool", "DoneRetention", "-1d", #""-1d" is not a time span"#),
        ("Backend", "URL", "ftp://files.example/in", #""ftp://files.example/in" is not an http:// or https:// URL"#),
        ("Backend", "URL", "backend.example/in", #""backend.example/in" is not an http:// or https:// URL"#),
        ("Backend", "URL", "https:///in", #""https:///in" is not an http:// or https:// URL"#),
        ("Backend", "URL", "http://a b/", #""http://a b/" is not an http:// or https:// URL"#),
        ("Backend", "URL", "http://h:0/", #""http://h:0/": port 0 is not between 1 and 65535"#),
        ("Backend", "URL", "https://user:hunter2@h/", "the URL carries a user name or password"),
        ("Backend", "Timeout", "0", #""0" is not greater than zero"#),
        ("Backend", "Timeout", "ten", #""ten" is not a time span"#),
        ("Backend", "BearerTokenFile", "token", "is not an absolute path"),
        ("Backend", "SigningSecretFile", "./whsec", "is not an absolute path"),
        ("Backend", "CAFile", "ca.pem", "is not an absolute path"),
        ("Backend", "ClientCertificateFile", "c.pem", "is not an absolute path"),
        ("Backend", "ClientKeyFile", "c.key", "is not an absolute path"),
        ("Backend", "ProbeDelays", "1s never", #""1s never": delay 2 ("never") is not a time span greater than zero"#),
        ("Backend", "MaxRate", "0", #""0" is not a number of requests per second from 0.001"#),
        ("Backend", "MaxRate", "0.0000000001", #""0.0000000001" is not a number of requests per second from 0.001"#),
        ("Backend", "MaxRate", "-5", #""-5" is not a number of requests per second"#),
        ("Backend", "MaxRate", "1e3", #""1e3" is not a number of requests per second"#),
        ("Backend", "MaxRate", "200000", #""200000" is not a number of requests per second from 0.001 to 100000"#),
        ("Delivery", "RetryDelays", "2s 0 5s", #""2s 0 5s": delay 2 ("0") is not a time span greater than zero"#),
        ("Delivery", "RetryDelays", "2s 300y", #""2s 300y": delay 2 ("300y") is not a time span greater than zero and at most 10y"#),
        ("Backend", "ProbeDelays", "300y", #""300y": delay 1 ("300y") is not a time span greater than zero and at most 10y"#),
        ("Backend", "Timeout", "11y", #""11y" is longer than 10y, the longest span accepted"#),
        ("Backend", "Timeout", "10y 1s", #""10y 1s" is longer than 10y"#),
        ("Backend", "URL", "https://svc:my secret@backend/tx", #""https://<redacted>" is not an http"#),
        ("Backend", "URL", "htps://host/tx?key=ab@SECRET", #""htps://<redacted>" is not an http"#),
        ("Delivery", "RetryDelays", "2s soon", #""2s soon": delay 2 ("soon") is not a time span greater than zero"#),
        ("Delivery", "MaxConcurrentDeliveries", "0", #""0" is not between 1 and 64"#),
        ("Delivery", "MaxConcurrentDeliveries", "65", #""65" is not between 1 and 64"#),
        ("Delivery", "MaxConcurrentDeliveries", "four", #""four" is not a whole number between 1 and 64"#),
        ("Delivery", "MaxConcurrentDeliveries", "+4", #""+4" is not a whole number between 1 and 64"#),
        ("Metrics", "TextfileDirectory", "node-exporter", "is not an absolute path"),
    ])
    func badValuesAreErrorsNamingTheKeyAndLine(section: String, key: String, value: String, message: String) {
        let files = ConfigurationFiles(minimal + "\n[\(section)]\n# the value under test\n\(key)=\(value)\n")
        let error = files.loadError()
        #expect(error?.file == files.path)
        #expect(error?.line == 5)
        #expect(error?.key == "\(section).\(key)")
        #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "no error")")
        if !message.hasPrefix("\"") {
            #expect(error?.description.contains(value) == false, "a value that may be a secret is not repeated")
        }
    }

    @Test func aURLWithCredentialsIsRefusedWithoutQuotingThem() {
        let files = ConfigurationFiles("[Backend]\nURL=https://user:hunter2@backend.example/\n")
        #expect(files.loadError()?.description.contains("hunter2") == false)
    }

    @Test(arguments: ["HTTPS://Backend.Example/in", "http://127.0.0.1:8080/transactions", "https://[2001:db8::1]/x#frag"])
    func httpAndHTTPSURLsWithAHostAreAccepted(url: String) throws {
        #expect(try ConfigurationFiles("[Backend]\nURL=\(url)\n").load().backend.url == url)
    }
}
