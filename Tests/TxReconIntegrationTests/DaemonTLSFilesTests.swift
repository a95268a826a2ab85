// The daemon's https backend with mutual TLS: CAFile=, ClientCertificateFile=
// and ClientKeyFile= are read once, at start, and handed to curl in memory.
// curl given paths would open them again for every connection it makes,
// which reads a secret file more than once and fails once it is gone.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct DaemonTLSFilesTests {
    @Test func theTLSFilesAreReadAtStartAndNotOpenedAgainForAConnection() async throws {
        let backend = try await HTTPSTestBackend(requireClientCertificate: true)
        let fixture = try DaemonFixture()
        try fixture.writeConfig("""
            [Backend]
            CAFile=\(backend.certificateFile)
            ClientCertificateFile=\(backend.clientCertificateFile)
            ClientKeyFile=\(backend.clientKeyFile)
            """, url: backend.url)
        let daemon = try await fixture.start()
        // No connection is open yet: the first one comes with the first item.
        for file in [backend.certificateFile, backend.clientCertificateFile, backend.clientKeyFile] {
            #expect(unlink(file) == 0)
        }
        try fixture.drop(fixture.envelope("mtls-1", version: 1), name: "mtls-1")
        #expect(await fixture.eventually { fixture.doneItems() == ["mtls-1"] },
                "delivered over mutual TLS with the files gone; stderr:\n\(daemon.stderr)")
        #expect(backend.clientNamesSeen == ["txrecon-test-client"])
    }

    @Test func aClientCertificateRenewedOnDiskIsPresentedFromTheNextReloadOn() async throws {
        let backend = try await HTTPSTestBackend(requireClientCertificate: true)
        let fixture = try DaemonFixture()
        let identity = fixture.directory.path + "/identity"
        func install(_ certificate: String, _ key: String) throws {
            _ = fixture.directory.write(try SystemCall.readFile(certificate, limit: 65536), to: "identity.pem",
                                        mode: 0o644)
            _ = fixture.directory.write(try SystemCall.readFile(key, limit: 65536), to: "identity.key", mode: 0o600)
        }
        try install(backend.clientCertificateFile, backend.clientKeyFile)
        try fixture.writeConfig("""
            [Backend]
            CAFile=\(backend.certificateFile)
            ClientCertificateFile=\(identity).pem
            ClientKeyFile=\(identity).key
            """, url: backend.url)
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("before-renewal", version: 1), name: "before-renewal")
        #expect(await fixture.eventually { fixture.doneItems() == ["before-renewal"] }, "stderr:\n\(daemon.stderr)")

        try install(backend.secondClientCertificateFile, backend.secondClientKeyFile)
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually { daemon.stderr.contains("configuration reloaded") })
        try fixture.drop(fixture.envelope("after-renewal", version: 1), name: "after-renewal")
        #expect(await fixture.eventually { fixture.doneItems() == ["after-renewal", "before-renewal"] },
                "stderr:\n\(daemon.stderr)")
        #expect(backend.clientNamesSeen == ["txrecon-test-client", "txrecon-test-client-2"])
    }

    /// libcurl writes every TLS session's keys to SSLKEYLOGFILE when it is
    /// set; with them, captured traffic gives up the bearer token.
    @Test func anInheritedSSLKEYLOGFILEIsNeverWritten() async throws {
        let backend = try await HTTPSTestBackend(requireClientCertificate: false)
        let fixture = try DaemonFixture()
        try fixture.writeConfig("[Backend]\nCAFile=\(backend.certificateFile)\n", url: backend.url)
        let keyLog = fixture.directory.path + "/keys.log"
        let daemon = try await fixture.start(environment: ["SSLKEYLOGFILE": keyLog])
        try fixture.drop(fixture.envelope("tls-1", version: 1), name: "tls-1")
        #expect(await fixture.eventually { fixture.doneItems() == ["tls-1"] }, "stderr:\n\(daemon.stderr)")
        #expect(access(keyLog, F_OK) != 0, "no TLS keys written")
    }
}
