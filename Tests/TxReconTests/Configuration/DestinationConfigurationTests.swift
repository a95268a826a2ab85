// Destination files (destinations/NAME.conf beside txrecon.conf) and
// [Match]: how they are read, what is refused with file, line and key, and
// which items each match takes.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct DestinationConfigurationTests {
    let directory = TemporaryDirectory("txrecon-destinations")
    var path: String { directory.path + "/txrecon.conf" }

    init() {
        directory.write("[Backend]\nURL=https://main.example/in\n[Delivery]\nMaxConcurrentDeliveries=16\n",
                        to: "txrecon.conf")
    }

    func destination(_ name: String, _ text: String) {
        directory.write(text, to: "destinations/" + name)
    }

    func loadError(sourceLocation: SourceLocation = #_sourceLocation) -> ConfigurationError? {
        #expect(throws: ConfigurationError.self, sourceLocation: sourceLocation) { try ConfigurationLoader.load(path: path) }
    }

    @Test func withoutDestinationsThereIsOnlyBackendAndItTakesEverything() throws {
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.destinations.isEmpty)
        #expect(configuration.deliveryConfigurations.map(\.name) == ["backend"])
        #expect(configuration.match.summary == "every item")
    }

    @Test func eachFileIsADestinationNamedAfterItInNameOrderWithItsOwnDefaults() throws {
        destination("sandbox.conf", "[Backend]\nURL=https://review.example/in\n[Match]\nEnvironment=Sandbox\n")
        destination("analytics.conf", "[Backend]\nURL=https://analytics.example/in\nBearerTokenFile=/etc/txrecon/a\n")
        destination("notes.txt", "not a destination")
        destination(".hidden.conf", "[Spool]\nDirectory=/nowhere\n")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.destinations.map(\.name) == ["analytics", "sandbox"])
        let analytics = configuration.destinations[0].settings
        #expect(analytics.path == directory.path + "/destinations/analytics.conf")
        #expect(analytics.backend.url == "https://analytics.example/in")
        #expect(analytics.delivery.maxConcurrentDeliveries == 8, "the default, not the main file's 16")
        #expect(configuration.destinations[1].settings.match.environments == ["Sandbox"])
        let merged = configuration.deliveryConfigurations
        #expect(merged.map(\.name) == ["backend", "analytics", "sandbox"])
        #expect(merged[1].configuration.spool == configuration.spool && merged[1].configuration.backend == analytics.backend)
        #expect(merged[1].configuration.origins["Backend.BearerTokenFile"]?.file == analytics.path)
    }

    @Test(arguments: ["backend", "Upper", "-dash-first", "a.b", String(repeating: "x", count: 33)])
    func aFileWhoseNameIsNoDestinationNameIsRefused(name: String) {
        destination(name + ".conf", "[Backend]\nURL=https://x.example/\n")
        let error = loadError()
        #expect(error?.file == directory.path + "/destinations/\(name).conf")
        #expect(error?.message.contains("is not a destination name") == true)
    }

    @Test func aStreamDestinationFileWithoutStreamIsRefusedNamingItsFile() {
        destination("stream.conf", "[Backend]\nURL=nats://127.0.0.1:4222\n")
        let error = loadError()
        #expect(error?.file == directory.path + "/destinations/stream.conf" && error?.key == "Backend.Stream"
                    && error?.message.contains("it must capture txrecon.>") == true, "\(String(describing: error))")
    }

    @Test func aDestinationWithoutURLOrWithASectionOfTheMainFileIsRefusedNamingItsFile() {
        destination("a.conf", "[Delivery]\nMaxConcurrentDeliveries=2\n")
        let missing = loadError()
        #expect(missing?.file == directory.path + "/destinations/a.conf" && missing?.key == "Backend.URL")

        destination("a.conf", "[Backend]\nURL=https://x.example/\n[Spool]\nDirectory=/srv\n")
        let section = loadError()
        #expect(section?.line == 3)
        #expect(section?.message == "section [Spool] does not belong in a destination file; the sections are "
                + "[Backend], [Delivery], [Match]")
    }

    @Test(arguments: [
        ("Environment=Staging", "\"Staging\" is not an App Store environment"),
        ("Kind=transaction", "\"transaction\" is not an item kind"),
        ("NotificationType=refund", "\"refund\" is not a notification type"),
    ])
    func aBadMatchValueIsRefusedAtItsLine(assignment: String, message: String) {
        directory.write("[Backend]\nURL=https://main.example/in\n[Match]\n\(assignment)\n", to: "txrecon.conf")
        let error = loadError()
        #expect(error?.line == 4 && error?.message.hasPrefix(message) == true, "\(String(describing: error))")
    }

    @Test func aMatchTakesWhatEveryKeyItSetsAllows() {
        var item = Item(key: ItemKey("1")!, version: ItemVersion(primary: 1), kind: .notification)
        item.fields.environment = "Sandbox"
        item.fields.notificationType = "REFUND"
        var match = DestinationMatch()
        #expect(match.accepts(item))
        match.environments = ["Production"]
        #expect(!match.accepts(item))
        match.environments = ["Production", "Sandbox"]
        match.kinds = [.notification]
        match.notificationTypes = ["DID_RENEW", "REFUND"]
        #expect(match.accepts(item))
        #expect(match.summary == "Environment=Production Sandbox Kind=appstore.notification NotificationType=DID_RENEW REFUND")
        match.notificationTypes = ["DID_RENEW"]
        #expect(!match.accepts(item))

        let envelope = Item(key: ItemKey("e")!, version: ItemVersion(primary: 1), kind: .envelope)
        var byEnvironment = DestinationMatch()
        byEnvironment.environments = ["Production", "Sandbox", "Xcode", "LocalTesting"]
        #expect(!byEnvironment.accepts(envelope), "an envelope has no environment")
        var byType = DestinationMatch()
        byType.notificationTypes = ["REFUND"]
        #expect(!byType.accepts(envelope), "only notifications carry a type")
    }

    @Test func resultsOfSeveralDestinationsMergeAppliedWinsOverSkipped() {
        var first = ControlResult()
        first.applied = ["a"]
        first.skipped = [("b", "not held"), ("c", "not held")]
        first.nothingToDoHere = ["b", "c"]
        var second = ControlResult()
        second.applied = ["b"]
        second.skipped = [("a", "not held"), ("c", "not queued")]
        second.nothingToDoHere = ["a", "c"]
        let merged = ControlResult(merging: [("backend", first), ("analytics", second)])
        #expect(merged.applied == ["a", "b"])
        #expect(merged.skipped.map(\.target) == ["c"] && merged.skipped.map(\.reason) == ["not held"])
    }

    /// Released at one destination, refused at another (a snapshot of it
    /// queued there beside the held one): the refusal is said, named, and
    /// the CLI's exit status is not 0.
    @Test func aRefusalAtOneDestinationIsSaidWhenAnotherApplied() {
        var first = ControlResult()
        first.applied = ["k"]
        var second = ControlResult()
        second.skipped = [("k", "another snapshot of it is queued")]
        let merged = ControlResult(merging: [("backend", first), ("analytics", second)])
        #expect(merged.applied == ["k"])
        #expect(merged.skipped.map(\.reason) == ["at analytics: another snapshot of it is queued"])
    }

    /// Held at analytics alone: `retry` there is refused, `backend` has no
    /// such key queued. The answer is analytics' refusal, named, not the
    /// first destination's "not queued".
    @Test func aRefusalAtOneDestinationIsSaidWhenNoneApplied() {
        var backend = ControlResult()
        backend.skipped = [("k", "not queued"), ("n", "not queued")]
        backend.nothingToDoHere = ["k", "n"]
        var analytics = ControlResult()
        analytics.skipped = [("k", "held: use release"), ("n", "not queued")]
        analytics.nothingToDoHere = ["n"]
        let merged = ControlResult(merging: [("backend", backend), ("analytics", analytics)])
        #expect(merged.applied.isEmpty)
        #expect(merged.skipped.map(\.target) == ["k", "n"])
        #expect(merged.skipped.map(\.reason) == ["at analytics: held: use release", "not queued"])
    }

    @Test func theStatusLineOfSeveralDestinationsAddsUpAndNamesEach() {
        var primary = EngineStatus()
        primary.phase = "running"
        primary.queued = 2
        primary.rejected = 1
        primary.backend = .ok
        var analytics = EngineStatus()
        analytics.phase = "running"
        analytics.queued = 5
        analytics.held = 1
        let status = DaemonStatus(destinations: [.init(name: "backend", status: primary),
                                                 .init(name: "analytics", status: analytics)])
        #expect(status.line == "7 queued, 0 delivering, 1 held, 1 rejected; backend ok; analytics not contacted yet")
        #expect(DaemonStatus(destinations: [.init(name: "backend", status: primary)]).line == primary.line)
    }
}

@Suite struct StreamDestinationConfigurationTests {
    let directory = TemporaryDirectory("txrecon-stream-config")

    func load(_ backend: String) throws(ConfigurationError) -> Configuration {
        directory.write("[Backend]\n" + backend, to: "txrecon.conf")
        return try ConfigurationLoader.load(path: directory.path + "/txrecon.conf")
    }

    @Test func aNatsURLMakesAStreamDestinationWithItsSubjectAndStream() throws {
        let configuration = try load("URL=nats://127.0.0.1:4222\nSubject=shop.items\nStream=ORDERS\n")
        #expect(configuration.backend.isStream)
        #expect(configuration.backend.subject == "shop.items" && configuration.backend.stream == "ORDERS")
        #expect(try load("URL=nats://nats.example\nStream=ORDERS\n").backend.subject == "txrecon")
        #expect(try !load("URL=https://backend.example/in\n").backend.isStream)
    }

    @Test func checkConfigShowsTheSubjectTheStreamAndWhetherTLSIsRequired() throws {
        let tls = ConfigurationSummary.lines(try load("URL=tls://nats.example:4222\nStream=ORDERS\n"),
                                             secrets: BackendSecrets(), verification: nil)
        #expect(tls.contains("Subject=txrecon") && tls.contains("Stream=ORDERS") && tls.contains("TLS: required (tls://)"),
                "\(tls)")
        let plain = ConfigurationSummary.lines(try load("URL=nats://nats.example:4222\nStream=ORDERS\n"),
                                               secrets: BackendSecrets(), verification: nil)
        #expect(plain.contains("TLS: only if the server requires it (nats://)"), "\(plain)")
        let http = ConfigurationSummary.lines(try load("URL=https://backend.example/in\n"), secrets: BackendSecrets(),
                                              verification: nil)
        #expect(!http.contains { $0.contains("Subject=") || $0.contains("TLS:") })
    }

    @Test func aTLSURLMakesAStreamDestinationThatRequiresTLSAndTakesTheTLSFiles() throws {
        let tls = try load("URL=tls://nats.example:4222\nStream=ORDERS\n")
        #expect(tls.backend.isStream && tls.backend.streamRequiresTLS)
        #expect(try !load("URL=nats://nats.example:4222\nStream=ORDERS\n").backend.streamRequiresTLS)
        let ca = directory.write("-----BEGIN CERTIFICATE-----\n", to: "ca.pem")
        let withCA = try load("URL=tls://nats.example:4222\nStream=ORDERS\nCAFile=\(ca)\n")
        #expect(withCA.backend.caFile == ca)
    }

    @Test(arguments: ["URL=nats://127.0.0.1:4222\nSubject=shop.items\n", "URL=tls://127.0.0.1:4222\nSubject=shop.items\n"])
    func aStreamDestinationWithoutStreamIsRefusedNamingTheKeyAndTheSubjectsToCapture(backend: String) {
        #expect {
            try load(backend)
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.file == directory.path + "/txrecon.conf" && error.key == "Backend.Stream"
                && error.message.hasPrefix("is required with a nats:// or tls:// URL=")
                && error.message.contains("it must capture shop.items.>")
        }
    }

    @Test(arguments: [
        ("URL=nats://127.0.0.1:4222/path\n", "is not a NATS server"),
        ("URL=nats://user:secret@127.0.0.1:4222\n", "carries a user name or password"),
        ("URL=ftp://example\n", "or nats://HOST:PORT (tls://HOST:PORT over TLS) for NATS JetStream"),
        ("URL=tls://127.0.0.1:4222/path\n", "is not a NATS server"),
        ("URL=nats://127.0.0.1\nSubject=a.*\n", "is not a NATS subject"),
        ("URL=nats://127.0.0.1\nSubject=a..b\n", "is not a NATS subject"),
        ("URL=nats://127.0.0.1\nStream=A.B\n", "is not a JetStream stream name"),
        ("URL=nats://127.0.0.1\nCAFile=/etc/ssl/ca.pem\n", "applies to a NATS server over TLS: make URL= tls://"),
        ("URL=nats://127.0.0.1\nClientCertificateFile=/etc/txrecon/c.pem\nClientKeyFile=/etc/txrecon/key.pem\n",
         "applies to a NATS server over TLS"),
        ("URL=tls://127.0.0.1\nSigningSecretFile=/etc/txrecon/whsec\n", "does not apply to a JetStream destination"),
        ("URL=https://backend.example/\nSubject=x\n", "applies only to a JetStream destination"),
        ("URL=nats://127.0.0.1\nStream=ITEMS\nHTTPVersion=2\n", "applies only to an http:// or https:// destination"),
        ("URL=https://backend.example/\nHTTPVersion=3\n", "is not an HTTP version txrecon speaks; give 1.1 or 2"),
    ])
    func whatAStreamDestinationCannotUseIsRefused(backend: String, message: String) {
        #expect {
            try load(backend)
        } throws: { error in
            (error as? ConfigurationError)?.message.contains(message) == true
        }
    }

    /// HTTPVersion=2 over http:// is refused where libcurl cannot reuse a
    /// cleartext HTTP/2 connection (7.88, curl issue 10634), taken where it can.
    @Test func cleartextHTTP2DependsOnTheLibcurlThatRunsIt() throws {
        let backend = "URL=http://backend.example/\nHTTPVersion=2\n"
        if CurlLibrary.reusesPriorKnowledgeConnections {
            #expect(try load(backend).backend.httpVersion == .http2)
        } else {
            #expect {
                try load(backend)
            } throws: { error in
                (error as? ConfigurationError)?.message.contains("2 over http:// needs libcurl 7.89 or later") == true
            }
        }
        #expect(try load("URL=https://backend.example/\nHTTPVersion=2\n").backend.httpVersion == .http2)
    }
}
