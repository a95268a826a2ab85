// JetStreamTransport: the `Transport` of a nats:// or tls:// destination: each item
// is published to NATS JetStream with libnats, and only the stream's publish
// acknowledgement (a duplicate's too) confirms it (JetStreamOutcome).
//
//   subject     Subject= "." key as the spool names it (letters, digits, -
//               and _ as they are, every other byte %XX, or = and base64url
//               for a long key), so a key's `.`, `*`, `>` or spaces never
//               split or widen the subject
//   headers     Nats-Msg-Id: the Idempotency-Key (KEY:VERSION), so the
//               stream drops a repeat within its duplicate window; a replay
//               appends `:replay-MS` (when it was asked for), which the
//               window does not swallow. Idempotency-Key and Content-Type
//               as over HTTP; never the Authorization header: the token
//               authenticates the connection instead
//   body        the HTTP body, byte for byte
//
// One worker thread per allowed concurrent delivery, as for curl, each
// blocking in a synchronous publish on the one shared connection
// (NATSSession), which libnats multiplexes. Nothing is logged here but what
// libnats says of the connection (NATSConnectionEvents).
import CNATS
import Synchronization

final class JetStreamTransport: DestinationTransport {
    /// What a publish needs from the configuration; replaced on reload.
    struct Options: Sendable, Equatable {
        var connection: NATSSession.Options
        var subject: String
        var stream: String?

        init(_ settings: BackendSettings, secrets: BackendSecrets) {
            connection = NATSSession.Options(url: settings.url, token: secrets.bearerToken,
                                             requiresTLS: settings.streamRequiresTLS, tls: secrets.tls,
                                             timeoutMilliseconds: max(1, settings.timeout.milliseconds))
            subject = settings.subject
            stream = settings.stream
        }
    }

    private struct Job: Sendable {
        var options: Options
        var execute: @Sendable (_ send: (DeliveryRequest) -> TransportResult) -> Void
    }

    private let jobs = HandoffQueue<Job>()
    private let options: Mutex<Options>
    /// The connection the workers share and the options it was made with,
    /// and whether the transport stopped (no session is installed then).
    private let session = Mutex<SharedSession>(SharedSession())

    private struct SharedSession {
        var current: (session: NATSSession, options: Options)?
        var stopped = false
    }
    /// What libnats says of the shared connection, logged.
    private let events: NATSConnectionEvents

    init(settings: BackendSettings, secrets: BackendSecrets, workers: Int, log: any LogSink) throws(ThreadStartError) {
        precondition(workers >= 1, "JetStreamTransport needs at least one worker, got \(workers)")
        options = Mutex(Options(settings, secrets: secrets))
        events = NATSConnectionEvents(log: log)
        for index in 1...workers {
            do {
                try DedicatedThread.start(name: "txrecon-nats-\(index)") { [self] in
                    while let job = jobs.take() {
                        job.execute { request in publish(request, with: job.options) }
                    }
                }
            } catch {
                _ = jobs.close()
                throw error
            }
        }
    }

    func start(_ exchange: @escaping @Sendable (_ send: (DeliveryRequest) -> TransportResult) -> Void) {
        let job = Job(options: options.withLock { $0 }, execute: exchange)
        if let refused = jobs.put(job) { Self.refuse(refused) }
    }

    func update(settings: BackendSettings, secrets: BackendSecrets) {
        let replacement = Options(settings, secrets: secrets)
        // Kept when equal: each publish compares its job's options with the
        // session's, which costs nothing while they share storage, but the
        // whole CA bundle, certificate and key once a reload has read the
        // same files into new arrays.
        options.withLock { if $0 != replacement { $0 = replacement } }
    }

    func shutdown() {
        for job in jobs.close() { Self.refuse(job) }
        session.withLock { shared in
            shared.stopped = true
            events.stopFollowing()
            shared.current = nil
        }
    }

    private static func refuse(_ job: Job) {
        TransportRefusal.run(job.execute)
    }

    /// The shared session for `options`: the current one, or a new
    /// connection when there is none, libnats closed it, or the options
    /// changed. Connecting happens outside the lock, so a stop never waits
    /// for a connection attempt; two workers connecting at once keep the
    /// first to finish.
    private func currentSession(_ options: Options) throws(TransportFailure) -> NATSSession {
        let existing = session.withLock { shared -> NATSSession? in
            guard let (session, madeWith) = shared.current, madeWith == options, !session.isClosed else { return nil }
            return session
        }
        if let existing { return existing }
        let made = try NATSSession(options.connection, events: events)
        return session.withLock { shared in
            if let (session, madeWith) = shared.current, madeWith == options, !session.isClosed { return session }
            // A connection finished after a stop serves its one publish and
            // goes: nothing keeps or reports it.
            guard !shared.stopped else { return made }
            // Followed before the session it replaces is released, whose
            // close (reported later, from libnats' thread) is then not news.
            events.follow(made.connectionHandle, server: options.connection.url)
            shared.current = (made, options)
            return made
        }
    }

    private func publish(_ request: DeliveryRequest, with options: Options) -> TransportResult {
        guard let key = request.key else { return .failure(TransportFailure(.other, "no item key for the subject")) }
        let session: NATSSession
        do {
            session = try currentSession(options)
        } catch {
            return .failure(error)
        }
        // The session's pointers are used below, outside any Swift use of
        // the session: keep it alive until the publish has returned.
        return withExtendedLifetime(session) { publish(request, key: key, on: session, with: options) }
    }

    private func publish(_ request: DeliveryRequest, key: ItemKey, on session: NATSSession,
                         with options: Options) -> TransportResult {
        let subject = options.subject + "." + key.fileName
        if request.body.count > session.maximumPayload {
            return .streamError(code: JetStreamOutcome.tooLarge, description: "\(request.body.count) bytes, more than the server's "
                                + "max_payload of \(session.maximumPayload)")
        }
        let idempotencyKey = request.header("Idempotency-Key") ?? key.rawValue
        let messageID = request.replayedAt.map { "\(idempotencyKey):replay-\($0)" } ?? idempotencyKey

        var message: OpaquePointer?
        var status = request.body.withUnsafeBytes { bytes in
            natsMsg_Create(&message, subject, nil, bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                           Int32(bytes.count))
        }
        guard status == NATS_OK, let message else { return .failure(NATSSession.failure(status, .other)) }
        defer { natsMsg_Destroy(message) }
        for (name, value) in [("Nats-Msg-Id", messageID), ("Idempotency-Key", idempotencyKey),
                              ("Content-Type", request.header("Content-Type") ?? "application/json")]
        where status == NATS_OK {
            status = natsMsgHeader_Set(message, name, value)
        }
        guard status == NATS_OK else { return .failure(NATSSession.failure(status, .other)) }

        var acknowledgement: UnsafeMutablePointer<jsPubAck>?
        var errorCode = jsErrCode(0)
        status = Self.withOptionalCString(options.stream) { stream in
            var publishOptions = jsPubOptions()
            jsPubOptions_Init(&publishOptions)
            publishOptions.MaxWait = options.connection.timeoutMilliseconds
            publishOptions.ExpectStream = stream
            return js_PublishMsg(&acknowledgement, session.jetStream, message, &publishOptions, &errorCode)
        }
        if status == NATS_OK, let acknowledgement {
            defer { jsPubAck_Destroy(acknowledgement) }
            let stream = acknowledgement.pointee.Stream.map { String(cString: $0) } ?? ""
            let sequence = acknowledgement.pointee.Sequence
            // libnats takes any JSON object without "error" for an
            // acknowledgement; a core NATS subscriber on the subject that
            // answers {} would have the item finished with nothing stored.
            guard !stream.isEmpty, sequence > 0, options.stream.map({ $0 == stream }) ?? true else {
                return .failure(TransportFailure(.protocolError, "the answer to the publish on \(subject) is not a "
                                                 + "JetStream acknowledgement (stream \"\(stream)\", sequence \(sequence)): "
                                                 + "a subscriber that is not a stream answers on the subject"))
            }
            return .published(stream: stream, sequence: sequence, duplicate: acknowledgement.pointee.Duplicate)
        }
        // libnats reports "no responders" with err_code 10076 (JetStream
        // not enabled) too: it is a retry with the probe either way.
        if status == NATS_NO_RESPONDERS {
            return .failure(TransportFailure(.connect, "no responders on \(subject): no stream captures the subject, "
                                             + "or JetStream is not available (yet)"))
        }
        if errorCode.rawValue != 0 {
            return .streamError(code: Int(errorCode.rawValue), description: NATSSession.failure(status, .other).message)
        }
        // The headers can take a body just under max_payload over it.
        if status == NATS_MAX_PAYLOAD {
            return .streamError(code: JetStreamOutcome.tooLarge, description: NATSSession.failure(status, .other).message)
        }
        return .failure(NATSSession.failure(status, status == NATS_TIMEOUT ? .timeout : .connect))
    }

    private static func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let text else { return body(nil) }
        return text.withCString(body)
    }
}

/// A destination's transport: HTTP or JetStream, chosen by URL='s scheme.
protocol DestinationTransport: Transport {
    /// New settings (and secrets) from a reload, for the attempts after it.
    func update(settings: BackendSettings, secrets: BackendSecrets)
    /// Ends the workers; exchanges handed over later fail at once.
    func shutdown()
}

extension CurlTransport: DestinationTransport {
    /// The token goes out in the requests' Authorization header, which
    /// the request builder makes; curl needs the settings and the TLS files.
    func update(settings: BackendSettings, secrets: BackendSecrets) {
        update(settings: settings, tls: secrets.tls)
    }
}

enum DestinationTransports {
    /// `settings`' transport, with `workers` threads.
    /// `log` hears what a stream's client library says of its connection.
    static func make(_ settings: BackendSettings, secrets: BackendSecrets, workers: Int,
                     log: any LogSink) throws -> any DestinationTransport {
        if settings.isStream {
            return try JetStreamTransport(settings: settings, secrets: secrets, workers: workers, log: log)
        }
        return try CurlTransport(settings: settings, tls: secrets.tls, workers: workers)
    }
}
