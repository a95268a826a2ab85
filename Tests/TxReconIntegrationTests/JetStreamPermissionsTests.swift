// The NATS permissions of docs/jetstream.md (issue 40, rule 2), run for
// real: nats-server started with exactly the configuration that page shows
// (between its nats-permissions markers, read from the page, only its
// paths moved into the test's directory), users known by their client
// certificates. txrecon's user may do all txrecon needs (every item reaches
// the stream); the stream's consumer may read the stream but is refused a
// subscription to the subjects and to JetStream's API, and a publish into
// the subjects; a user of another account hears nothing.
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

    @Test func theDocumentedPermissionsLetTxreconDeliverAndKeepEveryoneElseOffItsSubjects() async throws {
        let fixture = try DaemonFixture()
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
        let configuration = try Self.documentedConfiguration(replacing: [
            "/etc/nats/server.pem": path + "/server.pem", "/etc/nats/server.key": path + "/server.key",
            "/etc/nats/clients-ca.pem": path + "/clients-ca.pem", "/var/lib/nats": path + "/nats-store",
        ])
        _ = fixture.directory.write(configuration, to: "nats-server.conf")
        let nats = try await NATSServerProcess(directory: path, configurationFile: path + "/nats-server.conf")
        let url = "tls://127.0.0.1:\(nats.port)"

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
        try fixture.writeConfig("""
            [Backend]
            ProbeDelays=200ms
            Subject=shop.appstore
            Stream=APPSTORE
            CAFile=\(txrecon.ca)
            ClientCertificateFile=\(txrecon.certificate)
            ClientKeyFile=\(txrecon.key)
            """, url: url, delays: "200ms")
        let daemon = try await fixture.start()
        let ids = ["p-1", "p-2", "p-3"]
        for id in ids { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually(timeout: .seconds(30)) { fixture.doneItems() == ids },
                "\(daemon.stderr.suffix(2000))")
        let stored = try consumer.messages(in: "APPSTORE")
        #expect(Set(stored.compactMap(\.messageID)) == Set(ids.map { "\($0):1" }) && stored.count == ids.count,
                "\(stored.map(\.subject))")
        #expect(consumerHeard.answered.load(ordering: .relaxed) == 0 && otherHeard.answered.load(ordering: .relaxed) == 0)
        // txrecon's own permissions are all it needs: no violation reported.
        #expect(!daemon.stderr.lowercased().contains("permissions violation"), "\(daemon.stderr.suffix(2000))")
        withExtendedLifetime((consumer, other, nats)) {}
    }
}
