// JetStreamTransport: the `Transport` of a nats:// or tls:// destination: each item
// is published to NATS JetStream with libnats, and only the publish
// acknowledgement of the stream Stream= names confirms it
// (StreamAcknowledgement, JetStreamOutcome); a duplicate's only when the
// message the stream kept under that sequence is this publish's, on
// SUBJECT.KEY, or cannot be looked up for good (DuplicateAcknowledgement).
//
//   the stream  checked through JetStream's API (STREAM.INFO) on each new
//               connection and after each reconnect, before anything is
//               published on it: while Stream= does not exist or does not
//               capture SUBJECT.KEY (StreamCapture), nothing is sent and
//               each attempt fails with the reason, so the destination
//               counts as failing and its probe checks again on
//               ProbeDelays=; the items stay queued and go once it does.
//               Any publish that does not end in Stream='s acknowledgement
//               (10059 or 10060 say the stream changed since; an answer
//               from someone else; a timeout) has it checked again before
//               the next, and so does a reconnect during a publish, whose
//               acknowledgement is then not trusted
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
// (NATSSession), which libnats multiplexes. Logged here: the stream check's
// verdict when it changes (a warning with the reason, a notice when it
// passes again), the first answer on a connection that is not Stream='s
// acknowledgement and the first duplicate of another subject's message (a
// warning each), each reason a duplicate was finished unconfirmed (a
// warning, once per destination), and what libnats says of the connection
// (NATSConnectionEvents).
import CNATS
import Synchronization

final class JetStreamTransport: DestinationTransport {
    /// What a publish needs from the configuration; replaced on reload.
    struct Options: Sendable, Equatable {
        var connection: NATSSession.Options
        var subject: String
        var stream: String

        init(_ settings: BackendSettings, secrets: BackendSecrets) {
            connection = NATSSession.Options(url: settings.url, token: secrets.bearerToken,
                                             requiresTLS: settings.streamRequiresTLS, tls: secrets.tls,
                                             timeoutMilliseconds: max(1, settings.timeout.milliseconds))
            subject = settings.subject
            // The loader refuses a stream destination without Stream=; an
            // empty name is a stream no check finds, so nothing is sent.
            stream = settings.stream ?? ""
        }
    }

    private struct Job: Sendable {
        var options: Options
        var exchange: TransportExchange
    }

    private let jobs = HandoffQueue<Job>()
    private let options: Mutex<Options>
    /// The connection the workers share and the options it was made with,
    /// and whether the transport stopped (no session is installed then).
    private let session = Mutex<SharedSession>(SharedSession())

    private struct SharedSession {
        var current: (session: NATSSession, options: Options)? {
            // A new connection is checked before its first publish.
            didSet {
                streamCheckedAt = nil
                answerRefusalReported = false
                messageLookupRefused = false
                duplicateElsewhereReported = false
            }
        }
        var stopped = false
        /// The current session's reconnect count when Stream= was last found
        /// capturing the subjects on it; nil: check before the next publish.
        var streamCheckedAt: UInt64?
        /// Whether an answer that is not Stream='s acknowledgement was
        /// logged for the current session (once per connection).
        var answerRefusalReported = false
        /// Whether the server refused the current session's user a look-up
        /// of a stored message: not asked again on this connection, where
        /// each refusal costs a whole Timeout=.
        var messageLookupRefused = false
        /// Whether a duplicate of another subject's message was logged for
        /// the current session (once per connection).
        var duplicateElsewhereReported = false
    }
    /// What libnats says of the shared connection, logged.
    private let events: NATSConnectionEvents
    /// The stream check's problem last logged (nil: none, or it passed
    /// since), so that a verdict is logged when it changes, not per attempt.
    private let reportedProblem = Mutex<String?>(nil)
    /// Why duplicates were finished unconfirmed, each logged once.
    private let reportedUnconfirmed = Mutex<Set<DuplicateAcknowledgement.Unconfirmed>>([])
    private let log: any LogSink

    init(settings: BackendSettings, secrets: BackendSecrets, workers: Int, log: any LogSink) throws(ThreadStartError) {
        precondition(workers >= 1, "JetStreamTransport needs at least one worker, got \(workers)")
        options = Mutex(Options(settings, secrets: secrets))
        events = NATSConnectionEvents(log: log)
        self.log = log
        for index in 1...workers {
            do {
                try DedicatedThread.start(name: "txrecon-nats-\(index)") { [self] in
                    while let job = jobs.take() {
                        job.exchange.run { request in publish(request, with: job.options) }
                    }
                }
            } catch {
                _ = jobs.close()
                throw error
            }
        }
    }

    func start(_ exchange: TransportExchange) {
        let job = Job(options: options.withLock { $0 }, exchange: exchange)
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
        TransportRefusal.run(job.exchange)
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
        // the session: keep it alive until the publish has returned (which
        // also keeps `===` on it from meeting another session at its address).
        return withExtendedLifetime(session) {
            // Read before the check: a reconnect during it is seen next time.
            let reconnects = session.reconnects
            if let refusal = streamRefusal(on: session, reconnects: reconnects, with: options) {
                return .failure(refusal)
            }
            let result = publish(request, key: key, on: session, with: options)
            return checked(result, on: session, reconnects: reconnects, with: options)
        }
    }

    /// Why nothing may be published on `session` now, or nil: Stream= was
    /// found capturing the subjects since its last reconnect, or is now.
    private func streamRefusal(on session: NATSSession, reconnects: UInt64,
                               with options: Options) -> TransportFailure? {
        let known = self.session.withLock { shared in
            shared.current?.session === session && shared.streamCheckedAt == reconnects
        }
        if known { return nil }
        let verdict = StreamCapture.judge(session.lookUpStream(options.stream), stream: options.stream,
                                          subject: options.subject)
        report(verdict, with: options)
        guard let problem = verdict.problem else {
            self.session.withLock { shared in
                if shared.current?.session === session { shared.streamCheckedAt = reconnects }
            }
            return nil
        }
        return TransportFailure(.streamCheck, problem)
    }

    /// Logs the stream check's verdict when it differs from the last one
    /// logged: a problem as a warning, the check passing again as a notice.
    private func report(_ verdict: StreamCapture, with options: Options) {
        let problem = verdict.problem
        let previous = reportedProblem.withLock { reported in
            defer { reported = problem }
            return reported
        }
        guard problem != previous else { return }
        let (server, published) = (options.connection.url, options.subject + ".KEY")
        if let problem {
            log.write(LogEntry(.warning, "JetStream stream check on the NATS server \(server): \(problem); nothing "
                               + "is published to \(published) until the stream exists and captures it: items stay "
                               + "queued, and each attempt checks again (one probe at a time while the destination "
                               + "fails)"))
        } else if case let .captured(stream, filter) = verdict {
            log.write(LogEntry(.notice, "JetStream stream check on the NATS server \(server): stream \(stream) "
                               + "captures \(published) (as \(filter)); publishing"))
        }
    }

    /// `result` as the attempt sees it: an acknowledgement that came back
    /// over a connection made after the check is not trusted, and anything
    /// but Stream='s acknowledgement has the stream checked again before the
    /// next publish (10059 or 10060 say it changed; an answer from someone
    /// else or a timeout may mean it is gone): one more STREAM.INFO per
    /// failed attempt, which the probe paces while the destination fails.
    private func checked(_ result: TransportResult, on session: NATSSession, reconnects: UInt64,
                         with options: Options) -> TransportResult {
        var result = result
        if case .published = result {
            guard session.reconnects != reconnects else { return result }
            result = .failure(TransportFailure(.streamCheck, "reconnected to the NATS server during the publish; "
                                               + "the answer came over a connection whose stream was not checked yet"))
        }
        let refusedAnswer: TransportFailure? = if case let .failure(failure) = result,
                                                  failure.kind == .notAcknowledged { failure } else { nil }
        let firstRefusal = self.session.withLock { shared -> Bool in
            guard shared.current?.session === session else { return false }
            shared.streamCheckedAt = nil
            guard refusedAnswer != nil, !shared.answerRefusalReported else { return false }
            shared.answerRefusalReported = true
            return true
        }
        if firstRefusal, let refusedAnswer {
            log.write(LogEntry(.warning, "\(refusedAnswer.message). The item is not finished and is retried; "
                               + "only stream \(options.stream) may answer on \(options.subject).KEY: see who may "
                               + "subscribe to \(options.subject).> on the NATS server (logged once per connection)"))
        }
        return result
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
        status = options.stream.withCString { stream in
            var publishOptions = jsPubOptions()
            jsPubOptions_Init(&publishOptions)
            publishOptions.MaxWait = options.connection.timeoutMilliseconds
            // The stream that captures the subject refuses the message
            // (10060) unless it is this one.
            publishOptions.ExpectStream = stream
            return js_PublishMsg(&acknowledgement, session.jetStream, message, &publishOptions, &errorCode)
        }
        if status == NATS_OK, let acknowledgement {
            defer { jsPubAck_Destroy(acknowledgement) }
            let answer = StreamAcknowledgement(stream: acknowledgement.pointee.Stream.map { String(cString: $0) } ?? "",
                                               sequence: acknowledgement.pointee.Sequence,
                                               duplicate: acknowledgement.pointee.Duplicate)
            let result = answer.result(expecting: options.stream, subject: subject)
            guard case .published(_, let sequence, true) = result else { return result }
            return confirmed(result, sequence: sequence, subject: subject, messageID: messageID, on: session,
                             with: options)
        }
        // libnats reports "no responders" with err_code 10076 (JetStream
        // not enabled) too: it is a retry with the probe either way.
        if status == NATS_NO_RESPONDERS {
            return .failure(TransportFailure(.connect, "no responders on \(subject): the stream no longer captures "
                                             + "the subject, or JetStream is not available (yet)"))
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
}

extension JetStreamTransport {
    /// `duplicate`, Stream='s duplicate acknowledgement of `sequence` for
    /// the publish of `messageID` on `subject`, as the message the stream
    /// kept there shows it (DuplicateAcknowledgement): kept when that is
    /// this publish or cannot be told for good, a failure (retried) when it
    /// is another subject's or the look-up failed.
    fileprivate func confirmed(_ duplicate: TransportResult, sequence: UInt64, subject: String, messageID: String,
                               on session: NATSSession, with options: Options) -> TransportResult {
        let refusedBefore = self.session.withLock { $0.current?.session === session && $0.messageLookupRefused }
        let lookup = refusedBefore ? .notPermitted("the server refused it before on this connection")
            : session.storedMessage(in: options.stream, sequence: sequence)
        if case .notPermitted = lookup, !refusedBefore {
            self.session.withLock { shared in
                if shared.current?.session === session { shared.messageLookupRefused = true }
            }
        }
        switch DuplicateAcknowledgement.judge(lookup, stream: options.stream, sequence: sequence, subject: subject,
                                              messageID: messageID) {
        case .ours:
            return duplicate
        case let .unconfirmed(cause, risk):
            guard reportedUnconfirmed.withLock({ $0.insert(cause).inserted }) else { return duplicate }
            let remedy = switch cause {
            case .notPermitted:
                "let txrecon's user publish to $JS.API.STREAM.MSG.GET.\(options.stream) on the NATS server "
                    + "(docs/jetstream.md \"Who may answer\")"
            case .removed:
                "make sure no other destination publishes the same items into \(options.stream)"
            }
            log.write(LogEntry(.warning, "\(risk). Should another destination publish the same items into "
                               + "\(options.stream) under another subject (the same server or cluster reached by "
                               + "another URL=), such an item would be finished here with nothing on "
                               + "\(options.subject).KEY for its consumers: \(remedy) (logged once per destination)"))
            return duplicate
        case let .another(problem):
            let first = self.session.withLock { shared -> Bool in
                guard shared.current?.session === session, !shared.duplicateElsewhereReported else { return false }
                shared.duplicateElsewhereReported = true
                return true
            }
            if first {
                log.write(LogEntry(.warning, "\(problem). The item is not finished here until then; give each "
                                   + "destination that publishes into \(options.stream) a stream of its own, or "
                                   + "make their [Match] never meet (logged once per connection)"))
            }
            return .failure(TransportFailure(.duplicateUnconfirmed, problem))
        case let .unknown(reason):
            return .failure(TransportFailure(.duplicateUnconfirmed, reason))
        }
    }
}

/// An exchange handed over after its transport shut down still runs once,
/// as the Transport contract wants, with a send that fails at once; on a
/// thread of its own, since the caller may be the engine's.
enum TransportRefusal {
    private static let shutDownResult = TransportResult.failure(TransportFailure(.other, "transport shut down"))

    static func run(_ exchange: TransportExchange) {
        do {
            try DedicatedThread.start(name: "txrecon-refused") { exchange.run { _ in shutDownResult } }
        } catch {
            exchange.run { _ in shutDownResult }
        }
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
    /// `settings`' transport: HTTP with `workers` connections on `loop`, JetStream with
    /// `workers` threads.
    /// `log` hears what a stream's client library says of its connection.
    static func make(_ settings: BackendSettings, secrets: BackendSecrets, workers: Int, loop: ThreadExecutor,
                     log: any LogSink) throws -> any DestinationTransport {
        if settings.isStream {
            return try JetStreamTransport(settings: settings, secrets: secrets, workers: workers, log: log)
        }
        return try CurlTransport(settings: settings, tls: secrets.tls, connections: workers, loop: loop)
    }
}
