// HTTPSTestBackend: an https server on 127.0.0.1 for the TLS tests, with a
// self-signed certificate made by the `openssl` command for each test.
//
// The server is Python's http.server wrapped in ssl, started as a child
// process and killed by its PID; it answers every POST with 204. Files live
// in a temporary directory that disappears with the value.
import Foundation
import Testing
import TxReconTestSupport

final class HTTPSTestBackend {
    let directory = TemporaryDirectory("txrecon-tls")
    /// The server's self-signed certificate (for 127.0.0.1), usable as CAFile=.
    let certificateFile: String
    /// A client certificate and key the server requires when started with
    /// `requireClientCertificate`.
    let clientCertificateFile: String
    let clientKeyFile: String
    /// A second client identity the server takes as well, for a rotation:
    /// common name `txrecon-test-client-2`.
    let secondClientCertificateFile: String
    let secondClientKeyFile: String
    private(set) var port: UInt16 = 0
    private let server = Process()
    private var peersFile: String { directory.path + "/peers" }

    var url: String { "https://127.0.0.1:\(port)/" }

    /// The common name of the client certificate each POST came with, in
    /// order ("-" for none).
    var clientNamesSeen: [String] {
        ((try? String(contentsOfFile: peersFile, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    init(requireClientCertificate: Bool = false) async throws {
        certificateFile = directory.path + "/server.pem"
        clientCertificateFile = directory.path + "/client.pem"
        clientKeyFile = directory.path + "/client.key"
        secondClientCertificateFile = directory.path + "/client-2.pem"
        secondClientKeyFile = directory.path + "/client-2.key"
        let serverKey = directory.path + "/server.key"
        try await Self.makeCertificate(commonName: "127.0.0.1", certificate: certificateFile, key: serverKey)
        try await Self.makeCertificate(commonName: "txrecon-test-client", certificate: clientCertificateFile,
                                 key: clientKeyFile)
        try await Self.makeCertificate(commonName: "txrecon-test-client-2", certificate: secondClientCertificateFile,
                                 key: secondClientKeyFile)
        // Both self-signed client certificates are the server's client CAs.
        let clients = directory.path + "/clients.pem"
        let bundle = try [clientCertificateFile, secondClientCertificateFile]
            .map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
        try bundle.write(toFile: clients, atomically: true, encoding: .utf8)
        let portFile = directory.path + "/port"
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", "-c", Self.script, certificateFile, serverKey, portFile,
                            requireClientCertificate ? clients : "", peersFile]
        try server.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = UInt16(text) {
                self.port = port
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        stop()
        Issue.record("the https test server did not start within 60 s")
        throw CancellationError()
    }

    deinit {
        stop()
    }

    func stop() {
        guard server.isRunning else { return }
        // SIGKILL: children of the test process inherit its blocked signal
        // mask, in which SIGTERM is blocked.
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
    }

    /// A self-signed P-256 certificate for `commonName` and `subjectAltName`
    /// (the IP address 127.0.0.1 unless told), made with the `openssl`
    /// command; the key's file mode 0600. The command is waited for on a
    /// thread of its own (BlockingWork): waited for on one of the
    /// cooperative pool's two threads, it held up every other test (found
    /// with gdb in a full run, where a test of three `txrecon --help` took
    /// 15 to 60 s).
    static func makeCertificate(commonName: String, subjectAltName: String = "IP:127.0.0.1", certificate: String,
                                key: String) async throws {
        let status = await BlockingWork.run { () -> Int32? in
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            openssl.arguments = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                 "-nodes", "-days", "1", "-subj", "/CN=\(commonName)",
                                 "-addext", "subjectAltName=\(subjectAltName)", "-keyout", key, "-out", certificate]
            openssl.standardError = FileHandle.nullDevice
            guard (try? openssl.run()) != nil else { return nil }
            openssl.waitUntilExit()
            return openssl.terminationStatus
        }
        try #require(status == 0, "openssl req failed for \(commonName): \(status.map(String.init) ?? "not started")")
        try #require(chmod(key, 0o600) == 0)
    }

    /// argv: certificate, key, port file, client CA file (empty: none),
    /// the file each POST's client certificate name is appended to (before
    /// it is answered). The port is written to a temporary name first so
    /// that the test never reads half of it.
    private static let script = """
        import http.server, os, ssl, sys, threading
        certificate, key, port_file, client_ca, peers_file = sys.argv[1:6]
        peers_lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                peer = self.connection.getpeercert() or {}
                names = [value for rdn in peer.get("subject", ()) for (field, value) in rdn if field == "commonName"]
                with peers_lock, open(peers_file, "a") as peers:
                    peers.write((names[0] if names else "-") + "\\n")
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        if client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(client_ca)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """
}
