// NATSSession: one connection to a NATS server and its JetStream context,
// made with libnats from a nats:// or tls:// destination's settings.
//
// TLS: with tls:// the connection must be TLS (libnats refuses a server that
// does not offer it); with nats:// libnats upgrades only when the server
// requires it. Either way libnats checks the server's certificate and its
// name (or IP address) against the URL's host, with the system's
// authorities and CAFile='s added to them (libnats always loads the
// system's), and presents the first certificate of ClientCertificateFile=
// when given: the PEM texts read once at load, never the files again.
//
// libnats reconnects on its own (forever, every half second) and keeps what
// is published meanwhile in its reconnect buffer; a publish while it is
// disconnected still waits for its acknowledgement and times out, which the
// engine retries. A session that could not connect,
// or whose connection libnats closed, is replaced by the transport at the
// next attempt; it counts its reconnects, so that the transport checks the
// stream again on each new connection (`lookUpStream`, JetStream's
// STREAM.INFO), and looks up the message a duplicate acknowledgement names
// (`storedMessage`, STREAM.MSG.GET). Reports nothing; errors come back as
// TransportFailure, a lookup's as a StreamLookup or StoredMessageLookup.
import CNATS

/// A connection and its JetStream context. `@unchecked Sendable` because
/// OpaquePointer is not Sendable, though nothing here is mutable: both
/// pointers are `let`, set once in `init` and destroyed only in `deinit`,
/// when no thread holds the session any more (each publish keeps it alive
/// with `withExtendedLifetime`), and libnats documents the connection and
/// its JetStream context as safe to use from several threads at once.
final class NATSSession: @unchecked Sendable {
    private let connection: OpaquePointer
    let jetStream: OpaquePointer

    /// What a connection is made with. Printed, the token stays unprinted.
    struct Options: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
        var url: String
        var token: String?
        /// tls://: TLS or no connection.
        var requiresTLS: Bool
        var tls: BackendSecrets.TLSMaterial
        var timeoutMilliseconds: Int64

        var description: String {
            "NATSSession.Options(url: \(url), token: \(token == nil ? "none" : "<redacted>"), "
                + "requiresTLS: \(requiresTLS), tls: \(tls), timeoutMilliseconds: \(timeoutMilliseconds))"
        }

        var debugDescription: String { description }
    }

    /// Connects; `events` hears what libnats says of the connection later.
    init(_ settings: Options, events: NATSConnectionEvents? = nil) throws(TransportFailure) {
        var options: OpaquePointer?
        guard natsOptions_Create(&options) == NATS_OK, let options else {
            throw TransportFailure(.other, "libnats: cannot create connection options")
        }
        defer { natsOptions_Destroy(options) }
        var status = natsOptions_SetURL(options, settings.url)
        if status == NATS_OK, let token = settings.token { status = natsOptions_SetToken(options, token) }
        if status == NATS_OK, settings.requiresTLS { status = natsOptions_SetSecure(options, true) }
        if status == NATS_OK, let trusted = settings.tls.trustedCertificates {
            status = natsOptions_SetCATrustedCertificates(options, String(decoding: trusted, as: UTF8.self))
        }
        if status == NATS_OK, let certificate = settings.tls.certificate, let key = settings.tls.key {
            status = natsOptions_SetCertificatesChain(options, String(decoding: certificate, as: UTF8.self),
                                                      String(decoding: key, as: UTF8.self))
        }
        if status == NATS_OK, let events { status = events.register(on: options) }
        if status == NATS_OK { status = natsOptions_SetName(options, "txrecon") }
        if status == NATS_OK { status = natsOptions_SetTimeout(options, min(settings.timeoutMilliseconds, 10_000)) }
        if status == NATS_OK { status = natsOptions_SetMaxReconnect(options, -1) }
        if status == NATS_OK { status = natsOptions_SetReconnectWait(options, 500) }
        guard status == NATS_OK else { throw NATSSession.failure(status, .other) }

        var connection: OpaquePointer?
        status = natsConnection_Connect(&connection, options)
        guard status == NATS_OK, let connection else { throw NATSSession.failure(status, .connect) }
        var jetStreamOptions = jsOptions()
        jsOptions_Init(&jetStreamOptions)
        jetStreamOptions.Wait = settings.timeoutMilliseconds
        var context: OpaquePointer?
        status = natsConnection_JetStream(&context, connection, &jetStreamOptions)
        guard status == NATS_OK, let context else {
            natsConnection_Destroy(connection)
            throw NATSSession.failure(status, .other)
        }
        self.connection = connection
        jetStream = context
    }

    deinit {
        jsCtx_Destroy(jetStream)
        natsConnection_Destroy(connection)
    }

    /// The connection, for NATSConnectionEvents to tell its events from others'.
    var connectionHandle: OpaquePointer { connection }

    /// Whether libnats gave up on the connection (it never does by itself
    /// with unlimited reconnects, but a server can refuse us for good).
    var isClosed: Bool { natsConnection_Status(connection) == NATS_CONN_STATUS_CLOSED }

    /// The largest message the server takes, bytes.
    var maximumPayload: Int64 { natsConnection_GetMaxPayload(connection) }

    /// How many times libnats has reconnected this connection: a change
    /// means a connection that no stream check has seen yet.
    var reconnects: UInt64 {
        var statistics: OpaquePointer?
        guard natsStatistics_Create(&statistics) == NATS_OK, let statistics else { return .max }
        defer { natsStatistics_Destroy(statistics) }
        var count: UInt64 = 0
        guard natsConnection_GetStats(connection, statistics) == NATS_OK,
              natsStatistics_GetCounts(statistics, nil, nil, nil, nil, &count) == NATS_OK else { return .max }
        return count
    }

    /// What JetStream's API says of `stream` (`$JS.API.STREAM.INFO.<stream>`),
    /// waiting at most the connection's timeout.
    func lookUpStream(_ stream: String) -> StreamLookup {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var errorCode = jsErrCode(0)
        let status = js_GetStreamInfo(&info, jetStream, stream, nil, &errorCode)
        guard status == NATS_OK, let info else {
            if status == NATS_NOT_FOUND || errorCode.rawValue == 10059 { return .notFound }
            let failure = NATSSession.failure(status, .other)
            return .failed(status == NATS_NO_RESPONDERS ? "no responders (JetStream not enabled, or not ready)"
                           : failure.message)
        }
        defer { jsStreamInfo_Destroy(info) }
        guard let configuration = info.pointee.Config else { return .failed("an answer without the stream's configuration") }
        let count = Int(max(0, configuration.pointee.SubjectsLen))
        let subjects = (0..<count).compactMap { index in
            configuration.pointee.Subjects?[index].map { String(cString: $0) }
        }
        return .found(subjects: subjects)
    }

    /// The message `stream` holds at `sequence` (JetStream's API,
    /// `$JS.API.STREAM.MSG.GET.<stream>`), waiting at most the connection's
    /// timeout. The server refuses a user without that permission
    /// asynchronously, so the request times out; the connection's last
    /// error then names the request's subject.
    func storedMessage(in stream: String, sequence: UInt64) -> StoredMessageLookup {
        var message: OpaquePointer?
        var errorCode = jsErrCode(0)
        let status = js_GetMsg(&message, jetStream, stream, sequence, nil, &errorCode)
        guard status == NATS_OK, let message else {
            // JSNoMessageFoundErr
            if errorCode.rawValue == 10037 { return .removed }
            if status == NATS_TIMEOUT, let refusal = permissionViolation(naming: "$JS.API.STREAM.MSG.GET." + stream) {
                return .notPermitted(refusal)
            }
            return .failed(status == NATS_NO_RESPONDERS ? "no responders (JetStream not enabled, or not ready)"
                           : NATSSession.failure(status, .other).message)
        }
        defer { natsMsg_Destroy(message) }
        var id: UnsafePointer<CChar>?
        let messageID = natsMsgHeader_Get(message, "Nats-Msg-Id", &id) == NATS_OK ? id.map { String(cString: $0) } : nil
        return .found(subject: natsMsg_GetSubject(message).map { String(cString: $0) } ?? "", messageID: messageID)
    }

    /// The server's words when the last error on the connection is a
    /// permissions violation naming `subject`; nil otherwise.
    private func permissionViolation(naming subject: String) -> String? {
        var text: UnsafePointer<CChar>?
        guard natsConnection_GetLastError(connection, &text) == NATS_NOT_PERMITTED,
              let words = text.map({ String(cString: $0) }),
              words.lowercased().contains("\"\(subject.lowercased())\"") else { return nil }
        return words
    }

    /// libnats' words for `status`, with its last error's detail.
    static func failure(_ status: natsStatus, _ kind: TransportFailure.Kind) -> TransportFailure {
        var last = NATS_OK
        let detail = nats_GetLastError(&last).map { String(cString: $0) } ?? ""
        let text = String(cString: natsStatus_GetText(status))
        return TransportFailure(kind, detail.isEmpty || detail == text ? text : "\(text): \(detail)")
    }
}
