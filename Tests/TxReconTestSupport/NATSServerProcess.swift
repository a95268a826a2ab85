// NATSServerProcess: a real nats-server (Debian's, unpacked by `make deps`)
// with JetStream, on 127.0.0.1, for the JetStream destination's tests (or
// without JetStream, or from a configuration file); and JetStreamClient, a
// small libnats client the tests make streams with, read them back by, and
// play a subscriber that is not a stream with. Every server started is
// ended by PID when the value goes away.
import CNATS
import Glibc
import Synchronization
import TxRecon

package final class NATSServerProcess {
    package let port: UInt16
    /// Where JetStream stores; `start(withEmptyStore:)` moves it.
    package private(set) var storeDirectory: String
    private let logDirectory: String
    private let tls: TLS?
    private let jetStream: Bool
    private let configurationFile: String?
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

    /// Starts nats-server with JetStream storing in `storeDirectory` (or,
    /// `jetStream` false, a core NATS server only), on a free loopback port,
    /// and waits until it takes connections. With `configurationFile`, the
    /// server reads everything else (TLS, accounts, JetStream) from it.
    package init(directory: String, tls: TLS? = nil, jetStream: Bool = true,
                 configurationFile: String? = nil) async throws {
        storeDirectory = directory + "/nats-store"
        logDirectory = directory
        self.tls = tls
        self.jetStream = jetStream
        self.configurationFile = configurationFile
        port = LoopbackPort.unused()
        try await start()
    }

    deinit { process?.terminate() }

    /// (Re)starts the server on the same port and store; `withEmptyStore`:
    /// in a store of its own, so that the streams it had are gone.
    package func start(withEmptyStore: Bool = false) async throws {
        starts += 1
        guard let binary = Self.binary else { throw StartError(log: Self.missing) }
        if withEmptyStore { storeDirectory = logDirectory + "/nats-store-\(starts)" }
        var command = [binary, "-a", "127.0.0.1", "-p", String(port)]
        if let configurationFile {
            command += ["-c", configurationFile]
        } else if jetStream {
            command += ["-js", "-sd", storeDirectory]
        }
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
    private let errors = AsynchronousErrors()

    /// `tls` names the server's CA and the client identity it requires,
    /// for a server started with `NATSServerProcess.TLS` or a configuration
    /// that maps client certificates to users.
    package init(url: String, tls: (ca: String, certificate: String, key: String)? = nil) throws {
        var options: OpaquePointer?
        guard natsOptions_Create(&options) == NATS_OK, let options else { throw ClientError(what: "options") }
        defer { natsOptions_Destroy(options) }
        var status = natsOptions_SetURL(options, url)
        if status == NATS_OK, let tls {
            status = natsOptions_LoadCATrustedCertificates(options, tls.ca)
            if status == NATS_OK { status = natsOptions_LoadCertificatesChain(options, tls.certificate, tls.key) }
        }
        if status == NATS_OK {
            status = natsOptions_SetErrorHandler(options, { connection, _, _, closure in
                guard let connection, let closure else { return }
                var text: UnsafePointer<CChar>?
                _ = natsConnection_GetLastError(connection, &text)
                Unmanaged<AsynchronousErrors>.fromOpaque(closure).takeUnretainedValue()
                    .record(text.map { String(cString: $0) } ?? "")
            }, errors.closure)
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
    /// `update`: changes the stream of that name instead.
    package func addStream(_ name: String, subjects: [String], duplicateWindow: Duration = .seconds(120),
                           maximumMessageSize: Int32 = -1, update: Bool = false) throws {
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
                let status = update ? js_UpdateStream(&info, context, &configuration, nil, &errorCode)
                    : js_AddStream(&info, context, &configuration, nil, &errorCode)
                if let info { jsStreamInfo_Destroy(info) }
                return status
            }
        }
        guard status == NATS_OK else { throw ClientError(what: "add stream \(name) (JetStream error \(errorCode.rawValue))") }
    }

    /// Answers every core NATS message on `subject` (wildcards allowed)
    /// with `reply`, as a subscriber that is not a stream might (`{}`, or
    /// a reply shaped like an acknowledgement or JetStream's API answer);
    /// until the client goes. The responder counts the messages it got.
    @discardableResult
    package func answer(on subject: String, with reply: String) throws -> Responder {
        let responder = Responder(reply: reply)
        var subscription: OpaquePointer?
        let status = natsConnection_Subscribe(&subscription, connection, subject, { connection, _, message, closure in
            guard let message, let closure else { return }
            defer { natsMsg_Destroy(message) }
            let responder = Unmanaged<Responder>.fromOpaque(closure).takeUnretainedValue()
            responder.answered.add(1, ordering: .relaxed)
            if let reply = natsMsg_GetReply(message) { _ = natsConnection_PublishString(connection, reply, responder.reply) }
        }, responder.closure)
        guard status == NATS_OK, let subscription else { throw ClientError(what: "subscribe to \(subject)") }
        subscriptions.append(subscription)
        _ = natsConnection_Flush(connection)
        return responder
    }

    /// Publishes `text` to `subject` into JetStream with `messageID` as its
    /// Nats-Msg-Id, as an earlier attempt whose acknowledgement was lost
    /// would have: the sequence the stream acknowledged, and whether as a
    /// duplicate.
    @discardableResult
    package func publishIntoStream(_ text: String, to subject: String,
                                   messageID: String) throws -> (sequence: UInt64, duplicate: Bool) {
        var message: OpaquePointer?
        guard natsMsg_Create(&message, subject, nil, text, Int32(text.utf8.count)) == NATS_OK, let message,
              natsMsgHeader_Set(message, "Nats-Msg-Id", messageID) == NATS_OK else {
            throw ClientError(what: "message for \(subject)")
        }
        defer { natsMsg_Destroy(message) }
        var acknowledgement: UnsafeMutablePointer<jsPubAck>?
        var errorCode = jsErrCode(0)
        guard js_PublishMsg(&acknowledgement, context, message, nil, &errorCode) == NATS_OK, let acknowledgement else {
            throw ClientError(what: "publish into the stream on \(subject) (JetStream error \(errorCode.rawValue))")
        }
        defer { jsPubAck_Destroy(acknowledgement) }
        return (acknowledgement.pointee.Sequence, acknowledgement.pointee.Duplicate)
    }

    /// Removes message `sequence` from `stream`, as a work-queue consumer's
    /// acknowledgement or a limit would.
    package func deleteMessage(_ sequence: UInt64, from stream: String) throws {
        var errorCode = jsErrCode(0)
        guard js_DeleteMsg(context, stream, sequence, nil, &errorCode) == NATS_OK else {
            throw ClientError(what: "delete message \(sequence) of \(stream) (JetStream error \(errorCode.rawValue))")
        }
    }

    /// Publishes `text` to `subject` as core NATS, and waits until the
    /// server has read it (a refusal comes back asynchronously).
    package func publish(_ text: String, to subject: String) throws {
        guard natsConnection_PublishString(connection, subject, text) == NATS_OK,
              natsConnection_Flush(connection) == NATS_OK else { throw ClientError(what: "publish to \(subject)") }
    }

    /// What the server said asynchronously so far (libnats' last error at
    /// each call of the error handler), such as a permissions violation.
    package var asynchronousErrors: [String] { errors.entries.withLock { $0 } }

    /// A subscriber that answers with a fixed reply. Kept for the life of
    /// the process (`closure` takes a retain never given back): libnats may
    /// still deliver a message while the subscription is being destroyed.
    package final class Responder: Sendable {
        let reply: String
        package let answered = Atomic<Int>(0)

        init(reply: String) { self.reply = reply }

        var closure: UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }
    }

    /// The error handler's record, kept for the life of the process as the
    /// responders are: libnats may call back while the connection closes.
    private final class AsynchronousErrors: Sendable {
        let entries = Mutex<[String]>([])

        func record(_ text: String) { entries.withLock { $0.append(text) } }

        var closure: UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }
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
            // A sequence the server cannot hand out is an error, never a
            // gap: these streams have no limits, so nothing in them is
            // deleted, and a skipped message would read as one not sent.
            guard js_GetMsg(&message, context, stream, sequence, nil, &errorCode) == NATS_OK, let message else {
                throw ClientError(what: "message \(sequence) of \(stream) (JetStream error \(errorCode.rawValue))")
            }
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
