// Examples/backend/receiver.py, the reference backend a backend is written
// from, against requests txrecon's own RequestBuilder makes: any id is
// taken (its Idempotency-Key is percent-encoded), an older snapshot that
// arrives late never becomes the current one, the signed webhook-id is
// what a delivery is deduplicated on, and a whole receipt fits.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct ReferenceReceiverTests {
    let directory = TemporaryDirectory("txrecon-reference-receiver")
    let key: [UInt8] = Array(repeating: 7, count: 32)

    /// receiver.py with signatures required, listening on a port of its choosing.
    private func startReceiver() async throws -> (DaemonProcess, UInt16) {
        let secret = directory.write("whsec_" + Base64.encode(key), to: "secret")
        let script = DaemonIntegrationTests.repositoryRoot + "/Examples/backend/receiver.py"
        let process = try DaemonProcess(command: ["/usr/bin/env", "python3", script, "--listen", "127.0.0.1:0",
                                                  "--db", directory.path + "/backend.sqlite3",
                                                  "--signing-secret-file", secret],
                                        stderrPath: directory.path + "/receiver.err")
        var port: UInt16?
        #expect(await eventually {
            // "receiver: listening on http://127.0.0.1:PORT/transactions, …"
            guard let line = process.stderr.split(separator: "\n").first(where: { $0.contains("listening on") }),
                  let address = line.split(separator: " ").first(where: { $0.hasPrefix("http://127.0.0.1:") })
            else { return false }
            port = UInt16(address.dropFirst("http://127.0.0.1:".count).prefix { $0.isNumber })
            return port != nil
        }, "receiver.py started: \(process.stderr)")
        return (process, try #require(port))
    }

    private func send(_ item: Item, to port: UInt16,
                      changing header: (name: String, value: String)? = nil) async throws -> HTTPReply {
        let builder = RequestBuilder(softwareVersion: "test", secrets: BackendSecrets(webhookSigningKey: key))
        let request = builder.request(for: item, attempt: 1, receivedAt: 1_800_000_000_000,
                                      signedAt: Int64(time(nil)))
        var headers = request.headers.map { ($0.name, $0.value) }
        if let header { headers = headers.map { $0.0 == header.name ? (header.name, header.value) : $0 } }
        return try await LoopbackHTTPClient.send(port: port, path: "/transactions", body: request.body,
                                                 headers: headers)
    }

    private func envelope(_ id: String, _ version: ItemVersion, payload: JSONValue = .object([])) throws -> Item {
        Item(key: try #require(ItemKey(id)), version: version, kind: .envelope, payload: payload)
    }

    @Test func theReferenceBackendKeepsTheContract() async throws {
        let (receiver, port) = try await startReceiver()
        defer { receiver.terminate() }

        // Any id: an envelope's is any 1 to 128 bytes.
        for id in ["order 17", "café", "50%"] {
            let reply = try await send(try envelope(id, ItemVersion(primary: 5)), to: port)
            #expect(reply.status == 200, "\(id): \(reply.body)")
        }

        // The refund, then the purchase whose attempt timed out at txrecon
        // but was applied here afterwards: the refund stays current.
        let refund = try await send(try envelope("t1", ItemVersion(primary: 2, revoked: true)), to: port)
        let late = try await send(try envelope("t1", ItemVersion(primary: 1)), to: port)
        #expect(refund.status == 200 && late.status == 200)
        let current = try await LoopbackHTTPClient.send(port: port, method: "GET", path: "/transactions/current")
        let rows = try JSONValue.parse(Array(current.body.utf8)).arrayValue ?? []
        #expect(rows.first { $0["id"]?.stringValue == "t1" }?["idempotencyKey"]?.stringValue == "t1:2r",
                "\(current.body)")

        // The signature covers webhook-id: a captured request sent again
        // under another Idempotency-Key adds nothing.
        let forged = try await send(try envelope("t2", ItemVersion(primary: 1)), to: port,
                                    changing: ("Idempotency-Key", "t2:9"))
        #expect(forged.status == 400, "\(forged.body)")

        // A receipt is delivered whole, once: a body above 8 MiB fits.
        let large = try envelope("receipt", ItemVersion(primary: 1),
                                 payload: .object([("receipt", .string(String(repeating: "A", count: 9 << 20)))]))
        let reply = try await send(large, to: port)
        #expect(reply.status == 200, "\(reply.body.prefix(200))")
    }
}
