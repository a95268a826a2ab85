// The NATS permissions of docs/jetstream.md (issue 40, rule 2), run for
// real: nats-server started with exactly the configuration that page shows
// (between its nats-permissions markers, read from the page, only its
// paths moved into the test's directory), users known by their client
// certificates. txrecon's user may do all txrecon needs (every item reaches
// the stream, and a duplicate acknowledgement is checked against the message
// it names); the stream's consumer may read the stream but is refused a
// subscription to the subjects and to JetStream's API, and a publish into
// the subjects; a user of another account hears nothing. Without the
// permission to look that message up, a duplicate is finished as
// acknowledged, with a warning once.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(3)))
struct JetStreamPermissionsTests {
    /// docs/jetstream.md's configuration with each of `paths` (as written
    /// there) replaced: every one must be there, or the test is not testing
    /// the page's text.
    static func documentedConfiguration(replacing paths: [String: String]) throws -> String {
        let page = String(decoding: try SystemCall.readFile(DaemonIntegrationTests.repositoryRoot + "/docs/jetstream.md",
                                                            limit: 1 << 22), as: UTF8.self)
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false)
        let begin = try #require(lines.firstIndex(of: "<!-- nats-permissions: begin -->"))
        let end = try #require(lines[begin...].firstIndex(of: "<!-- nats-permissions: end -->"))
        var text = lines[(begin + 1)..<end].filter { !$0.hasPrefix("```") }.joined(separator: "\n")
        for (written, replacement) in paths.sorted(by: { $0.key < $1.key }) {
            try #require(text.contains("\"\(written)\""), "docs/jetstream.md's configuration names \(written)")
            text = text.replacingOccurrences(of: "\"\(written)\"", with: "\"\(replacement)\"")
        }
        return text
    }

    /// nats-server with the documented configuration (with `changes`, as
    /// `documentedConfiguration` makes them), in `fixture`'s directory, and
    /// the client identities it knows.
    static func documentedServer(in fixture: DaemonFixture, changing changes: [String: String] = [:]) async throws
        -> (nats: NATSServerProcess, url: String, clients: [String: (ca: String, certificate: String, key: String)]) {
        let path = fixture.directory.path
        try await HTTPSTestBackend.makeCertificate(commonName: "nats", certificate: path + "/server.pem",
                                             key: path + "/server.key")
        var clients: [String: (ca: String, certificate: String, key: String)] = [:]
        var bundle = ""
        for user in ["txrecon", "appstore-consumer", "other"] {
            try await HTTPSTestBackend.makeCertificate(commonName: user, certificate: path + "/\(user).pem",
                                                 key: path + "/\(user).key")
            clients[user] = (path + "/server.pem", path + "/\(user).pem", path + "/\(user).key")
            bundle += String(decoding: try SystemCall.readFile(path + "/\(user).pem", limit: 1 << 16), as: UTF8.self)
        }
        _ = fixture.directory.write(bundle, to: "clients-ca.pem")
        let configuration = try documentedConfiguration(replacing: [
            "/etc/nats/server.pem": path + "/server.pem", "/etc/nats/server.key": path + "/server.key",
            "/etc/nats/clients-ca.pem": path + "/clients-ca.pem", "/var/lib/nats": path + "/nats-store",
        ].merging(changes) { $1 })
        _ = fixture.directory.write(configuration, to: "nats-server.conf")
        let nats = try await NATSServerProcess(directory: path, configurationFile: path + "/nats-server.conf")
        return (nats, "tls://127.0.0.1:\(nats.port)", clients)
    }

    /// Configures the daemon as txrecon's user of the documented server.
    static func configureTxrecon(_ fixture: DaemonFixture, url: String,
                                 as txrecon: (ca: String, certificate: String, key: String)) throws {
        try fixture.writeConfig("""
            [Backend]
            ProbeDelays=200ms
            Subject=shop.appstore
            Stream=APPSTORE
            CAFile=\(txrecon.ca)
            ClientCertificateFile=\(txrecon.certificate)
            ClientKeyFile=\(txrecon.key)
            """, url: url, delays: "200ms")
    }

    @Test func theDocumentedPermissionsLetTxreconDeliverAndKeepEveryoneElseOffItsSubjects() async throws {
        let fixture = try DaemonFixture()
        let (nats, url, clients) = try await Self.documentedServer(in: fixture)

        // The consumer makes the stream and reads it, through JetStream's API.
        let consumer = try JetStreamClient(url: url, tls: clients["appstore-consumer"]!)
        try consumer.addStream("APPSTORE", subjects: ["shop.appstore.>"])
        // It would answer as the stream if it could hear txrecon. One at a
        // time: libnats keeps only the last error, which the next overwrites.
        func refused(_ what: String) async -> Bool {
            await eventually { consumer.asynchronousErrors.contains { $0.lowercased().contains("permissions violation for \(what)") } }
        }
        let consumerHeard = try consumer.answer(on: "shop.appstore.>", with: #"{"stream":"APPSTORE","seq":1}"#)
        #expect(await refused(#"subscription to "shop.appstore.>""#), "\(consumer.asynchronousErrors)")
        try consumer.answer(on: "$JS.API.STREAM.INFO.APPSTORE", with: "{}")
        #expect(await refused(#"subscription to "$js.api.stream.info.appstore""#), "\(consumer.asynchronousErrors)")
        try consumer.publish(#"{"forged":true}"#, to: "shop.appstore.forged")
        #expect(await refused(#"publish to "shop.appstore.forged""#), "\(consumer.asynchronousErrors)")
        // Another account: the same subject names, none of APPSTORE's messages.
        let other = try JetStreamClient(url: url, tls: clients["other"]!)
        let otherHeard = try other.answer(on: "shop.appstore.>", with: #"{"stream":"APPSTORE","seq":1}"#)

        let txrecon = clients["txrecon"]!
        // p-1 is there already, as an attempt whose acknowledgement was lost
        // left it: its duplicate acknowledgement is looked up and confirmed.
        try JetStreamClient(url: url, tls: txrecon).publishIntoStream(fixture.envelope("p-1", version: 1),
                                                                      to: "shop.appstore.p-1", messageID: "p-1:1")
        try Self.configureTxrecon(fixture, url: url, as: txrecon)
        let daemon = try await fixture.start()
        let ids = ["p-1", "p-2", "p-3"]
        for id in ids { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually(timeout: .seconds(30)) { fixture.doneItems() == ids },
                "\(daemon.stderr.suffix(2000))")
        // Awaited: a file is in done/ just before the engine logs its delivery.
        #expect(await fixture.eventually {
            daemon.stderr.contains("p-1: delivered on attempt 1 (stream APPSTORE sequence 1 (a duplicate))")
        }, "\(daemon.stderr.suffix(2000))")
        #expect(!daemon.stderr.contains("finished as acknowledged"), "\(daemon.stderr.suffix(2000))")
        let stored = try consumer.messages(in: "APPSTORE")
        #expect(Set(stored.compactMap(\.messageID)) == Set(ids.map { "\($0):1" }) && stored.count == ids.count,
                "\(stored.map(\.subject))")
        #expect(consumerHeard.answered.load(ordering: .relaxed) == 0 && otherHeard.answered.load(ordering: .relaxed) == 0)
        // txrecon's own permissions are all it needs: no violation reported.
        #expect(!daemon.stderr.lowercased().contains("permissions violation"), "\(daemon.stderr.suffix(2000))")
        withExtendedLifetime((consumer, other, nats)) {}
    }

    @Test func withoutThePermissionToLookAMessageUpADuplicateIsFinishedWithAWarningOnce() async throws {
        let fixture = try DaemonFixture()
        // Its place in txrecon's permissions taken by one it has anyway.
        let (nats, url, clients) = try await Self.documentedServer(
            in: fixture, changing: ["$JS.API.STREAM.MSG.GET.APPSTORE": "$JS.API.STREAM.INFO.APPSTORE"])
        let consumer = try JetStreamClient(url: url, tls: clients["appstore-consumer"]!)
        try consumer.addStream("APPSTORE", subjects: ["shop.appstore.>"])
        let txrecon = clients["txrecon"]!
        let earlier = try JetStreamClient(url: url, tls: txrecon)
        for id in ["d-1", "d-2"] {
            try earlier.publishIntoStream(fixture.envelope(id, version: 1), to: "shop.appstore." + id,
                                          messageID: id + ":1")
        }
        try Self.configureTxrecon(fixture, url: url, as: txrecon)
        let daemon = try await fixture.start()
        for id in ["d-1", "d-2"] { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually(timeout: .seconds(30)) { fixture.doneItems() == ["d-1", "d-2"] },
                "\(daemon.stderr.suffix(2000))")
        // Told once, naming what to grant; the server's refusal in the journal.
        let warning = "and txrecon may not look that message up"
        #expect(daemon.stderr.components(separatedBy: warning).count - 1 == 1, "\(daemon.stderr.suffix(2000))")
        #expect(daemon.stderr.contains("let txrecon's user publish to $JS.API.STREAM.MSG.GET.APPSTORE on the NATS server")
                && daemon.stderr.contains("(logged once per destination)"), "\(daemon.stderr.suffix(2000))")
        #expect(daemon.stderr.lowercased().contains("permissions violation for publish to \"$js.api.stream.msg.get.appstore\""),
                "\(daemon.stderr.suffix(2000))")
        #expect(try consumer.messages(in: "APPSTORE").count == 2)
        withExtendedLifetime((consumer, earlier, nats)) {}
    }
}
