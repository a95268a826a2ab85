// NATSServerProcess: a real nats-server (Debian's, unpacked by `make deps`)
// with JetStream, on 127.0.0.1, for the JetStream destination's tests; and JetStreamClient, a
// small libnats client the tests make streams with and read them back by.
// Every server started is ended by PID when the value goes away.
import CNATS
import Glibc
import TxRecon

package final class NATSServerProcess {
    package let port: UInt16
    package let storeDirectory: String
    private let logDirectory: String
    private let tls: TLS?
    private var process: DaemonProcess?
    private var starts = 0

    /// PEM files for a server that speaks TLS only; with `clientCA`, it
    /// also requires a client certificate issued by it.
    package struct TLS: Sendable {
        package var certificate: String
        package var key: String
        package var clientCA: String?

        package init(certificate: String, key: String, clientCA: String? = nil) {
            self.certificate = certificate
            self.key = key
            self.clientCA = clientCA
        }
    }

    package var url: String { (tls == nil ? "nats" : "tls") + "://127.0.0.1:\(port)" }

    /// Starts nats-server with JetStream storing in `storeDirectory`, on a
    /// free loopback port, and waits until it takes connections.
    package init(directory: String, tls: TLS? = nil) async throws {
        storeDirectory = directory + "/nats-store"
        logDirectory = directory
        self.tls = tls
        port = LoopbackPort.unused()
        try await start()
    }

    deinit { process?.terminate() }

    /// (Re)starts the server on the same port and store.
    package func start() async throws {
        starts += 1
        guard let binary = Self.binary else { throw StartError(log: Self.missing) }
        var command = [binary, "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDirectory]
        if let tls {
            command += ["--tls", "--tlscert", tls.certificate, "--tlskey", tls.key]
            if let clientCA = tls.clientCA { command += ["--tlsverify", "--tlscacert", clientCA] }
        }
        let process = try DaemonProcess(command: command, stderrPath: logDirectory + "/nats-server-\(starts).log")
        self.process = process
        let deadline = ContinuousClock.now + .seconds(20)
        while !process.stderr.contains("Server is ready") {
            guard ContinuousClock.now < deadline else { throw StartError(log: process.stderr) }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The nats-server to run: `$TXRECON_NATS_SERVER`; else the one `make
    /// deps` unpacks from Debian's package into .build/nats-server/ of this
    /// checkout (never installed, so that no system-wide NATS service is
    /// enabled); else an installed /usr/sbin/nats-server. nil when none is.
    package static var binary: String? {
        if let path = getenv("TXRECON_NATS_SERVER") { return String(cString: path) }
        let checkout = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
        return [checkout + "/.build/nats-server/usr/sbin/nats-server", "/usr/sbin/nats-server"]
            .first { access($0, X_OK) == 0 }
    }

    private static let missing = "no nats-server: `make deps` unpacks Debian's into .build/nats-server/ "
        + "(or set TXRECON_NATS_SERVER to one)"

    /// Ends the server (SIGTERM, then SIGKILL) and waits for it.
    package func stop() {
        process?.terminate()
        process = nil
    }

    package struct StartError: Error, CustomStringConvertible {
        package var log: String
        package var description: String { "nats-server did not become ready:\n\(log)" }
    }
}

/// A message as the stream stored it.
package struct StoredMessage: Sendable, Equatable {
    package var subject: String
    package var messageID: String?
    package var body: [UInt8]
}

/// The tests' own JetStream client (libnats, as the daemon uses).
package final class JetStreamClient {
    private let connection: OpaquePointer
    private let context: OpaquePointer
    private var subscriptions: [OpaquePointer] = []

    /// `tls` names the server's CA and the client identity it requires,
    /// for a server started with `NATSServerProcess.TLS`.
    package init(url: String, tls: (ca: String, certificate: String, key: String)? = nil) throws {
        var options: OpaquePointer?
        guard natsOptions_Create(&options) == NATS_OK, let options else { throw ClientError(what: "options") }
        defer { natsOptions_Destroy(options) }
        var status = natsOptions_SetURL(options, url)
        if status == NATS_OK, let tls {
            status = natsOptions_LoadCATrustedCertificates(options, tls.ca)
            if status == NATS_OK { status = natsOptions_LoadCertificatesChain(options, tls.certificate, tls.key) }
        }
        var connection: OpaquePointer?
        guard status == NATS_OK, natsConnection_Connect(&connection, options) == NATS_OK, let connection else {
            throw ClientError(what: "connect to \(url)")
        }
        var context: OpaquePointer?
        guard natsConnection_JetStream(&context, connection, nil) == NATS_OK, let context else {
            natsConnection_Destroy(connection)
            throw ClientError(what: "JetStream context")
        }
        self.connection = connection
        self.context = context
    }

    deinit {
        subscriptions.forEach { natsSubscription_Destroy($0) }
        jsCtx_Destroy(context)
        natsConnection_Destroy(connection)
    }

    package struct ClientError: Error, CustomStringConvertible {
        package var what: String
        package var description: String { "JetStream client: \(what) failed" }
    }

    /// Adds a stream capturing `subjects`; `duplicateWindow` is its
    /// Duplicates setting, `maximumMessageSize` its MaxMsgSize (-1: none).
    package func addStream(_ name: String, subjects: [String], duplicateWindow: Duration = .seconds(120),
                           maximumMessageSize: Int32 = -1) throws {
        var configuration = jsStreamConfig()
        jsStreamConfig_Init(&configuration)
        let copies = subjects.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        var pointers = copies.map { UnsafePointer<CChar>($0) }
        var errorCode = jsErrCode(0)
        let status = name.withCString { streamName in
            pointers.withUnsafeMutableBufferPointer { buffer in
                configuration.Name = streamName
                configuration.Subjects = buffer.baseAddress
                configuration.SubjectsLen = Int32(buffer.count)
                configuration.Storage = js_FileStorage
                configuration.Duplicates = Int64(duplicateWindow.components.seconds) * 1_000_000_000
                configuration.MaxMsgSize = maximumMessageSize
                var info: UnsafeMutablePointer<jsStreamInfo>?
                let status = js_AddStream(&info, context, &configuration, nil, &errorCode)
                if let info { jsStreamInfo_Destroy(info) }
                return status
            }
        }
        guard status == NATS_OK else { throw ClientError(what: "add stream \(name) (JetStream error \(errorCode.rawValue))") }
    }

    /// Answers every core NATS message on `subject` (wildcards allowed)
    /// with `{}`, as a subscriber that is not a stream might; until the
    /// client goes.
    package func answerWithEmptyObjects(on subject: String) throws {
        var subscription: OpaquePointer?
        let status = natsConnection_Subscribe(&subscription, connection, subject, { connection, _, message, _ in
            guard let message else { return }
            if let reply = natsMsg_GetReply(message) { _ = natsConnection_PublishString(connection, reply, "{}") }
            natsMsg_Destroy(message)
        }, nil)
        guard status == NATS_OK, let subscription else { throw ClientError(what: "subscribe to \(subject)") }
        subscriptions.append(subscription)
        _ = natsConnection_Flush(connection)
    }

    /// Every message in `stream`, in sequence order.
    package func messages(in stream: String) throws -> [StoredMessage] {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var errorCode = jsErrCode(0)
        guard js_GetStreamInfo(&info, context, stream, nil, &errorCode) == NATS_OK, let info else {
            throw ClientError(what: "stream info of \(stream)")
        }
        let (first, last, count) = (info.pointee.State.FirstSeq, info.pointee.State.LastSeq, info.pointee.State.Msgs)
        jsStreamInfo_Destroy(info)
        guard count > 0 else { return [] }
        var messages: [StoredMessage] = []
        for sequence in first...last {
            var message: OpaquePointer?
            guard js_GetMsg(&message, context, stream, sequence, nil, &errorCode) == NATS_OK, let message else { continue }
            defer { natsMsg_Destroy(message) }
            var id: UnsafePointer<CChar>?
            let messageID = natsMsgHeader_Get(message, "Nats-Msg-Id", &id) == NATS_OK ? id.map { String(cString: $0) } : nil
            let length = Int(natsMsg_GetDataLength(message))
            let body = natsMsg_GetData(message).map { data in
                Array(UnsafeRawBufferPointer(start: data, count: length))
            } ?? []
            messages.append(StoredMessage(subject: String(cString: natsMsg_GetSubject(message)), messageID: messageID,
                                          body: body))
        }
        return messages
    }
}
