// Configuration mistakes an operator makes without an error: a
// NotificationType= Apple does not send, two destinations delivering the
// same items to one URL, a file others may write (or read, with a
// credential in URL=), a backup or hidden file that is never read. Each is
// refused or warned about naming the file (and line); the warnings are the
// ones check-config, start and a reload give (ConfigurationWarnings).
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct ConfigurationMistakesTests {
    let directory = TemporaryDirectory("txrecon-mistakes")
    var path: String { directory.path + "/txrecon.conf" }

    init() {
        directory.write("[Backend]\nURL=https://main.example/in\n", to: "txrecon.conf")
    }

    /// Every warning the daemon would give for the configuration on disk.
    func warnings() throws -> [String] {
        let configuration = try ConfigurationLoader.load(path: path)
        return ConfigurationWarnings.daemon(configuration, secrets: BackendSecrets())
            + configuration.destinations.flatMap { ConfigurationWarnings.destination($0, secrets: BackendSecrets()) }
    }

    @Test func aNotificationTypeAppleDoesNotSendIsWarnedAboutAtItsLineWithTheNearestOne() throws {
        directory.write("[Backend]\nURL=https://review.example/in\n[Match]\nNotificationType=REFUND REFUNDED "
                        + "RESCIND_CONSENT NEW_TYPE_FROM_APPLE\n", to: "destinations/review.conf")
        let file = directory.path + "/destinations/review.conf"
        #expect(try warnings() == [
            "\(file):4: [Match] NotificationType=REFUNDED is not one of Apple's notification types (did you mean "
                + "REFUND?): no notification Apple sends today carries it, so it matches none; it is kept as written, "
                + "for Apple adds types without notice",
            "\(file):4: [Match] NotificationType=NEW_TYPE_FROM_APPLE is not one of Apple's notification types: no "
                + "notification Apple sends today carries it, so it matches none; it is kept as written, for Apple "
                + "adds types without notice",
        ])
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.destinations[0].settings.match.notificationTypes?.count == 4, "a warning, not a refusal")

        directory.write("[Backend]\nURL=https://main.example/in\n[Match]\nNotificationType=DID_RENEWW\n", to: "txrecon.conf")
        #expect(try warnings().first?.hasPrefix("\(path):4: [Match] NotificationType=DID_RENEWW is not one of Apple's "
                                                  + "notification types (did you mean DID_RENEW?)") == true)
    }

    /// One stream keeps one message per Nats-Msg-Id whatever its subject:
    /// two destinations publishing one item into it under two subjects
    /// would leave one of them told "duplicate" and its consumers without it.
    @Test func twoStreamDestinationsSharingAStreamUnderTwoSubjectsAreRefusedNamingBoth() throws {
        directory.write("[Backend]\nURL=nats://127.0.0.1:4222\nSubject=shop.orders\nStream=APPSTORE\n", to: "txrecon.conf")
        directory.write("[Backend]\nURL=NATS://127.0.0.1:4222\nSubject=shop.analytics\nStream=APPSTORE\n",
                        to: "destinations/analytics.conf")
        let refused = #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(path: path) }
        #expect(refused?.file == directory.path + "/destinations/analytics.conf" && refused?.line == 4
                && refused?.key == "Backend.Stream" && refused?.message.contains("backend publishes into too (\(path):4)") == true,
                "\(String(describing: refused))")
        // Streams of their own, or matches that never meet: taken.
        directory.write("[Backend]\nURL=nats://127.0.0.1:4222\nSubject=shop.analytics\nStream=ANALYTICS\n",
                        to: "destinations/analytics.conf")
        #expect(throws: Never.self) { try ConfigurationLoader.load(path: path) }
        directory.write("[Backend]\nURL=nats://127.0.0.1:4222\nSubject=shop.analytics\nStream=APPSTORE\n"
                        + "[Match]\nEnvironment=Sandbox\n", to: "destinations/analytics.conf")
        directory.write("[Backend]\nURL=nats://127.0.0.1:4222\nSubject=shop.orders\nStream=APPSTORE\n"
                        + "[Match]\nEnvironment=Production\n", to: "txrecon.conf")
        #expect(throws: Never.self) { try ConfigurationLoader.load(path: path) }
    }

    /// The same server written two ways is one stream all the same:
    /// nats:// and tls:// reach it alike, 4222 is libnats' port when none
    /// is written, and a trailing slash (or a path) means nothing to NATS.
    @Test(arguments: [
        ("nats://127.0.0.1:4222", "tls://127.0.0.1:4222"),
        ("nats://127.0.0.1", "nats://127.0.0.1:4222/"),
        ("tls://nats.example", "NATS://Nats.Example:4222"),
        ("nats://[::1]:4222", "nats://[::1]"),
    ])
    func oneStreamOnOneServerWrittenTwoWaysIsRefused(main: String, analytics: String) throws {
        directory.write("[Backend]\nURL=\(main)\nSubject=shop.orders\nStream=APPSTORE\n", to: "txrecon.conf")
        directory.write("[Backend]\nURL=\(analytics)\nSubject=shop.analytics\nStream=APPSTORE\n",
                        to: "destinations/analytics.conf")
        let refused = #expect(throws: ConfigurationError.self) { try ConfigurationLoader.load(path: path) }
        #expect(refused?.file == directory.path + "/destinations/analytics.conf" && refused?.line == 4
                && refused?.key == "Backend.Stream", "\(String(describing: refused))")
        #expect(refused?.message.contains("backend publishes into too (\(path):4), on the same NATS server (") == true,
                "\(String(describing: refused))")
        #expect(ConfigurationError.exitStatus == 78)
        // Another port, or another host, is another server (for all the
        // loader can tell without the network).
        directory.write("[Backend]\nURL=nats://127.0.0.1:4223\nSubject=shop.analytics\nStream=APPSTORE\n",
                        to: "destinations/analytics.conf")
        #expect(throws: Never.self) { try ConfigurationLoader.load(path: path) }
        // Under other credentials it may be another NATS account, whose
        // APPSTORE is another stream.
        let token = directory.write("analytics-token\n", to: "analytics.token", mode: 0o600)
        directory.write("[Backend]\nURL=\(analytics)\nSubject=shop.analytics\nStream=APPSTORE\nBearerTokenFile=\(token)\n",
                        to: "destinations/analytics.conf")
        #expect(throws: Never.self) { try ConfigurationLoader.load(path: path) }
    }

    @Test func theNATSServerOfAURLIsItsHostAndPortWhateverTheSpelling() {
        func server(_ url: String) -> String? {
            var backend = BackendSettings()
            backend.url = url
            return backend.natsServer
        }
        #expect(server("nats://127.0.0.1:4222") == "127.0.0.1:4222")
        #expect(server("TLS://Nats.Example") == "nats.example:4222")
        #expect(server("nats://nats.example:04222/") == "nats.example:4222")
        #expect(server("nats://[::1]") == "[::1]:4222" && server("tls://[::1]:5222") == "[::1]:5222")
        #expect(server("nats://localhost:4222") != server("nats://127.0.0.1:4222"), "nothing is resolved")
        #expect(server("https://nats.example/") == nil)
    }

    @Test func twoStreamDestinationsOnOneServerAndSubjectWrittenTwoWaysAreWarnedAbout() throws {
        directory.write("[Backend]\nURL=nats://127.0.0.1\nSubject=shop.orders\nStream=APPSTORE\n", to: "txrecon.conf")
        directory.write("[Backend]\nURL=tls://127.0.0.1:4222/\nSubject=shop.orders\nStream=APPSTORE\n",
                        to: "destinations/copy.conf")
        let shared = try warnings()
        #expect(shared.count == 1 && shared.first?.contains("each is published to the same server and subject twice") == true,
                "\(shared)")
    }

    @Test func anAppFileItsGroupMayWriteIsWarnedAbout() throws {
        let app = directory.write("[Verification]\nBundleID=com.example.puzzles\nEnvironment=Sandbox\n",
                                  to: "apps/puzzles.conf")
        #expect(chmod(app, 0o664) == 0)
        let all = try warnings()
        #expect(all.filter { $0.hasPrefix("\(app) is writable by its group") }.count == 1, "\(all)")
    }

    /// docs/destinations.md offers App= to narrow a [Match]: two apps' items
    /// published into one stream under a subject each never meet.
    @Test func twoStreamDestinationsSplitByAppShareAStream() throws {
        directory.write("[Backend]\nURL=nats://127.0.0.1:4222\nSubject=shop.a\nStream=APPSTORE\n[Match]\nApp=alpha\n",
                        to: "txrecon.conf")
        directory.write("[Backend]\nURL=nats://127.0.0.1:4222\nSubject=shop.b\nStream=APPSTORE\n[Match]\nApp=puzzles\n",
                        to: "destinations/puzzles.conf")
        directory.write("[Verification]\nBundleID=com.example.alpha\nEnvironment=Sandbox\n", to: "apps/alpha.conf")
        directory.write("[Verification]\nBundleID=com.example.puzzles\nEnvironment=Sandbox\n",
                        to: "apps/puzzles.conf")
        #expect(throws: Never.self) { try ConfigurationLoader.load(path: path) }
    }

    @Test func twoDestinationsTakingTheSameItemsToOneURLAreWarnedAboutNamingBothLines() throws {
        directory.write("[Backend]\nURL=HTTPS://Main.Example/in\n", to: "destinations/copy.conf")
        let shared = try warnings()
        #expect(shared == ["\(directory.path)/destinations/copy.conf:2: [Backend] URL= is the one of destination backend "
                           + "(\(path):2), and their [Match] can take the same items: each is sent to the same URL twice, "
                           + "under two names (the backend keeps one by its Idempotency-Key); give one its own URL=, or "
                           + "narrow a [Match] so that they never meet"])

        // One URL, with one token for Production and another for Sandbox:
        // no item goes to both.
        directory.write("[Backend]\nURL=https://main.example/in\n[Match]\nEnvironment=Production\n", to: "txrecon.conf")
        directory.write("[Backend]\nURL=https://main.example/in\n[Match]\nEnvironment=Sandbox\n", to: "destinations/copy.conf")
        #expect(try warnings().isEmpty)
        // Transactions only beside notifications only: none in common either.
        directory.write("[Backend]\nURL=https://main.example/in\n[Match]\nKind=appstore.transaction\n", to: "txrecon.conf")
        directory.write("[Backend]\nURL=https://main.example/in\n[Match]\nNotificationType=REFUND\n",
                        to: "destinations/copy.conf")
        #expect(try warnings().isEmpty)
        // Another path on the same host is another endpoint.
        directory.write("[Backend]\nURL=https://main.example/other\n", to: "destinations/copy.conf")
        directory.write("[Backend]\nURL=https://main.example/in\n", to: "txrecon.conf")
        #expect(try warnings().isEmpty)
    }

    @Test(arguments: ["txrecon.conf", "txrecon.conf.d/10-a.conf", "destinations/review.conf"])
    func aConfigurationFileEveryUserMayWriteIsRefusedNamingIt(name: String) throws {
        directory.write("[Backend]\nURL=https://review.example/in\n", to: name, mode: 0o666)
        let file = directory.path + "/" + name
        #expect(throws: ConfigurationError(
            file: file, line: nil, key: nil,
            message: "is writable by every user (mode 0666): anyone could choose where transactions go and which "
                + "token goes with them; run \"chmod o-w \(file)\"")) { try ConfigurationLoader.load(path: path) }
    }

    @Test func aConfigurationFileItsGroupMayWriteIsWarnedAbout() throws {
        directory.write("[Backend]\nURL=https://review.example/in\n", to: "destinations/review.conf", mode: 0o664)
        let file = directory.path + "/destinations/review.conf"
        #expect(try warnings() == ["\(file) is writable by its group (mode 0664): every member can choose where "
                                   + "transactions go and which token goes with them; run \"chmod g-w \(file)\" unless "
                                   + "the group is yours alone"])
    }

    @Test func aURLWithAQueryInAFileEveryUserMayReadIsWarnedAbout() throws {
        directory.write("[Backend]\nURL=https://review.example/in?key=s3cr3t-v4lue\n", to: "destinations/review.conf",
                        mode: 0o644)
        let file = directory.path + "/destinations/review.conf"
        #expect(try warnings() == ["\(file): [Backend] URL= carries a query, which may hold a credential and is kept out "
                                   + "of every log, in \(file), which every user can read (mode 0644); run \"chgrp "
                                   + "txrecon \(file)\" and \"chmod o-r \(file)\" (the daemon reads it as txrecon)"])
        #expect(chmod(file, 0o640) == 0)
        #expect(try warnings().isEmpty)
    }

    @Test func backupAndHiddenFilesBesideTheConfigurationAreNamedAsNotRead() throws {
        directory.write("[Backend]\nURL=https://review.example/in\n", to: "destinations/review.conf~")
        directory.write("[Backend]\nURL=https://review.example/in\n", to: "destinations/.review.conf")
        directory.write("[Delivery]\nMaxConcurrentDeliveries=2\n", to: "txrecon.conf.d/10-a.conf.dpkg-old")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.destinations.isEmpty && configuration.delivery.maxConcurrentDeliveries == 8,
                "none of them is read")
        let rest = "remove it, or rename it if it is meant to be read"
        #expect(try warnings() == [
            "\(path).d/10-a.conf.dpkg-old is not read: only drop-ins named NAME.conf, not hidden, are; " + rest,
            "\(directory.path)/destinations/.review.conf is not read: only destination files named NAME.conf, not "
                + "hidden, are; " + rest,
            "\(directory.path)/destinations/review.conf~ is not read: only destination files named NAME.conf, not "
                + "hidden, are; " + rest,
        ])
    }
}
