// Reception: what `txrecon receive` does with one request, on its
// connection's thread: screen its head (route, upload token, rate), judge
// its body (BodyVerdict), write what is to be kept durably into new/
// (GroupCommit), answer. The one rule: 200 only once the body is on disk.
//
//   200  {"spooled": NAME}: durably in new/ (and, for genuine data this
//        configuration refuses, a "setAside" note: the daemon will reject it)
//   400  not one of the endpoint's formats; 422 a signature or chain that
//        does not verify; neither is written. (And from HTTPServer, before
//        any of this: 400 or 501 for a head RFC 9112 says to reject,
//        RequestSyntax.)
//   401  no or another upload token; 404 no such path; 405 another method;
//   413  over MaxFileSize=; 429 over MaxRequestsPerSecondPerAddress=
//   503  with Retry-After: the spool cannot take it (full, missing, new/
//        over MaxInboxFiles=, rejected/ over RejectedQuota=); and from
//        HTTPServer, `busy` past the memory budget for bodies (BodyBudget).
//        GET /healthz is 503 exactly when a notification would be (`health`).
//        A notification answered 503 here is a gap in what txrecon heard
//        from Apple: the hour is reported to `txrecon reconcile`
//        (ReconcileGaps), which then checks every subscription live in it.
//
// Reports one log entry per request that is not a plain 200 (a debug one for
// those), and per connection refused at a connection limit, with TXRECON_*
// fields, those a client can repeat at no cost at most once a second per
// client; secrets never reach them (the log sink redacts).
import Glibc
import Synchronization

final class Reception: Sendable {
    /// What the reception needs from the configuration; replaced on reload.
    struct Settings: Sendable {
        var receive: ReceiveSettings
        var acceptEnvelopes: Bool
        var policy: SignedDataPolicy?
        /// The bearer token the upload endpoints require; nil for none.
        var uploadToken: String?
        /// The apps, whose names `/appstore/notifications/NAME` may carry.
        var apps: [String] = []
    }

    private let settings: Mutex<Settings>
    private let layout: SpoolLayout
    private let commit: GroupCommit
    private let reporter: ReceiveReporter
    private let verifiers = VerifierPool()
    private let rate: Mutex<AddressRateLimit>
    private let inbox: DirectoryGauge
    private let rejected: DirectoryGauge
    private let setAsideLedger: SetAsideLedger
    /// One entry a second per client and answer, for the refusals a client
    /// can repeat as fast as it likes (ReceiveRefusal.isRepeatable).
    private let throttle = LogThrottle()
    /// Numbers the files /healthz writes, so that concurrent checks never meet.
    private let healthProbes = Atomic<Int>(0)
    /// The start of the last hour reported as a gap (ms since 1970), so that
    /// an hour of refusals writes one file.
    private let gapReported = Atomic<Int64>(0)
    private let log: any LogSink

    init(settings: Settings, layout: SpoolLayout, commit: GroupCommit, reporter: ReceiveReporter, log: any LogSink) {
        self.settings = Mutex(settings)
        self.layout = layout
        self.commit = commit
        self.reporter = reporter
        self.log = log
        rate = Mutex(AddressRateLimit(perSecond: settings.receive.maxRequestsPerSecondPerAddress))
        inbox = DirectoryGauge(path: layout.new)
        rejected = DirectoryGauge(path: layout.rejected) { !$0.hasPrefix(".") && !$0.hasSuffix(".reason") }
        setAsideLedger = SetAsideLedger(inbox: layout.new)
    }

    func reconfigure(_ next: Settings) {
        let limit = settings.withLock { current in
            defer { current = next }
            return current.receive.maxRequestsPerSecondPerAddress
        }
        if limit != next.receive.maxRequestsPerSecondPerAddress {
            rate.withLock { $0 = AddressRateLimit(perSecond: next.receive.maxRequestsPerSecondPerAddress) }
        }
    }

    // MARK: Head

    /// A refusal of `head` before its body is read, or nil to read it.
    func screen(_ head: HTTPRequestHead) -> HTTPAnswer? {
        let settings = self.settings.withLock { $0 }
        let refusal: ReceiveRefusal?
        switch ReceiveEndpoint.route(head, acceptEnvelopes: settings.acceptEnvelopes, apps: settings.apps) {
        case let .failure(routing):
            refusal = routing
        case let .success(endpoint):
            if !rate.withLock({ $0 }).allows(head.client) {
                refusal = ReceiveRefusal(429, "too-many-requests", "more than "
                    + "\(settings.receive.maxRequestsPerSecondPerAddress) requests a second from \(head.client)",
                                         headers: [("Retry-After", "1")])
            } else if endpoint.needsUploadToken, let token = settings.uploadToken,
                      !Reception.bearer(head.header("Authorization"), matches: token) {
                refusal = ReceiveRefusal(401, "unauthorized", "\(endpoint.rawValue) needs the upload token "
                    + "(Authorization: Bearer …)", headers: [("WWW-Authenticate", "Bearer")])
            } else {
                refusal = nil
            }
        }
        guard let refusal else { return nil }
        report(refusal, head: head)
        return refusal.answer
    }

    /// Whether `header` is `Bearer <token>`, compared in constant time.
    static func bearer(_ header: String?, matches token: String) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.utf8.dropFirst(7)), wanted = Array(token.utf8)
        var difference = UInt8(given.count == wanted.count ? 0 : 1)
        for index in 0..<wanted.count { difference |= wanted[index] ^ (index < given.count ? given[index] : 0) }
        return difference == 0
    }

    // MARK: Body

    /// The answer to a whole request.
    func handle(_ request: HTTPRequest) -> HTTPAnswer {
        let settings = self.settings.withLock { $0 }
        guard case let .success(endpoint) = ReceiveEndpoint.route(request.head, acceptEnvelopes: settings.acceptEnvelopes,
                                                                  apps: settings.apps)
        else { return HTTPAnswer.json(404, ["error": "not-found", "detail": "nothing is served at this path"]) }
        if endpoint == .health { return health() }
        let decoder = InputDecoder(acceptEnvelopes: endpoint == .envelopes && settings.acceptEnvelopes)
        let verdict = verifiers.with(settings.policy) { verifier in
            BodyVerdict.judge(request.body, at: endpoint, decoder: decoder, verifier: verifier)
        }
        switch verdict {
        case let .refuse(refusal):
            report(refusal, head: request.head)
            return refusal.answer
        case let .spool(setAside):
            if let refusal = room(forRefused: setAside != nil, settings: settings) {
                report(refusal, head: request.head)
                if endpoint == .notifications { reportGap() }
                return refusal.answer
            }
            do throws(SpoolError) {
                let name: String
                var inInbox = false
                do {
                    name = try commit.commit(request.body) { name in
                        // Counted from here: a failed fsync of new/ after
                        // this leaves the body there, bound for rejected/.
                        inInbox = true
                        if setAside != nil { setAsideLedger.spooled(name) }
                    }
                } catch {
                    if setAside != nil, !inInbox { setAsideLedger.release() }
                    throw error
                }
                reporter.spooled(setAside: setAside != nil,
                                 onPathOf: ReceiveEndpoint.appPath(request.head.path, apps: settings.apps))
                report(spooled: name, setAside: setAside, head: request.head)
                var members: KeyValuePairs<String, String> = ["spooled": name]
                if let setAside {
                    members = ["spooled": name, "setAside": "\(setAside.code): the daemon will move it to rejected/; "
                        + "fix the configuration, then requeue it"]
                }
                return HTTPAnswer.json(200, members)
            } catch {
                let refusal = ReceiveRefusal(503, "spool-unavailable", "the spool cannot take it now "
                    + "(\(String(cString: strerror(error.code)))); try again", headers: [("Retry-After", "60")])
                report(refusal, head: request.head, spoolError: error)
                if endpoint == .notifications { reportGap() }
                return refusal.answer
            }
        }
    }

    /// Tells `txrecon reconcile` (of every app) that a notification of this
    /// hour was refused; once an hour. A failure only logs: the refusal stands, and
    /// Apple sends the notification again.
    private func reportGap() {
        let gap = ReconcileGaps.receiverGap(at: Timestamp.nowMilliseconds())
        guard gapReported.load(ordering: .relaxed) != gap.from else { return }
        // Refused unread, the notification could be any app's: each app's
        // reconcile is told (the spool's own state without apps).
        let apps = settings.withLock { $0.apps }
        let layouts = apps.isEmpty ? [layout] : apps.map(layout.app)
        do {
            for layout in layouts { try ReconcileGaps.report(gap, layout: layout) }
            // Only once written: a failure (likely while the spool cannot
            // take anything) is tried again at the next refusal.
            gapReported.store(gap.from, ordering: .relaxed)
        } catch {
            log.write(LogEntry(.warning, "cannot tell txrecon reconcile about the refused notifications of "
                + "\(Timestamp.rfc3339(milliseconds: gap.from)): \(error)"))
        }
    }

    /// 503 while new/ is over MaxInboxFiles=, or for refused data while
    /// rejected/ and what is on its way there (SetAsideLedger) are at
    /// RejectedQuota=; nil when there is room, and then for refused data a
    /// reservation the caller ends.
    private func room(forRefused refused: Bool, settings: Settings) -> ReceiveRefusal? {
        guard let waiting = inbox.count() else {
            return ReceiveRefusal(503, "spool-unavailable", "the spool's new/ cannot be read", headers: [("Retry-After", "60")])
        }
        if waiting >= settings.receive.maxInboxFiles {
            return ReceiveRefusal(503, "inbox-full", "\(waiting) files wait in new/, MaxInboxFiles= is "
                + "\(settings.receive.maxInboxFiles): the daemon is behind or stopped; try again",
                                  headers: [("Retry-After", "30")])
        }
        guard refused else { return nil }
        // Unknown is full: the quota is what bounds refused data on disk.
        guard let inRejected = rejected.count() else {
            return ReceiveRefusal(503, "spool-unavailable", "the spool's rejected/ cannot be read",
                                  headers: [("Retry-After", "60")])
        }
        if !setAsideLedger.reserve(quota: settings.receive.rejectedQuota, rejectedCount: inRejected) {
            return ReceiveRefusal(503, "rejected-quota", "rejected/ holds RejectedQuota= files already, with those "
                + "on their way there; genuine data this configuration refuses is taken again once an operator "
                + "has dealt with them", headers: [("Retry-After", "3600")])
        }
        return nil
    }

    /// What /healthz writes to see that one more notification fits: more
    /// than any App Store notification (the samples are up to 19 KiB), as
    /// every connection may read before the body budget counts.
    static let notificationRoom = [UInt8](repeating: 0x0A, count: BodyBudget.freeBytes)

    /// 200 while one more notification would be taken, else 503 with the
    /// reason in words: what `handle` would answer one now, so that a load
    /// balancer or a monitor sees what Apple would. new/ under
    /// MaxInboxFiles= (`room`, the same count and answer); a file of
    /// `notificationRoom` bytes written in tmp/ (then removed, never
    /// synced), so that a full, read-only or over-quota file system is
    /// seen, not only the permissions, nor only room for a byte; and new/
    /// writable. The body budget is not asked: a notification is read
    /// within each connection's free bytes, which it never refuses; nor
    /// RejectedQuota=, which only genuine data this configuration refuses
    /// meets. At MaxConnections= the check is refused like any connection,
    /// which says the same.
    private func health() -> HTTPAnswer {
        let settings = self.settings.withLock { $0 }
        if let full = room(forRefused: false, settings: settings) {
            return HTTPAnswer.json(503, ["status": full.detail, "error": full.code], headers: full.headers)
        }
        let probe = TemporaryFile.received.path(in: layout,
                                                "healthz-\(getpid())-\(healthProbes.add(1, ordering: .relaxed).newValue)")
        do throws(SpoolError) {
            try SystemCall.writeNewFile(probe, Self.notificationRoom, mode: 0o600, sync: false)
            unlink(probe)
            guard access(layout.new, W_OK | X_OK) == 0 else { throw SpoolError("access", layout.new) }
            return HTTPAnswer.json(200, ["status": "ok"])
        } catch {
            // The body goes to whoever asks: the reason, not the paths.
            return HTTPAnswer.json(503, ["status": "the spool cannot take one more notification (a file of "
                + "\(Self.notificationRoom.count >> 10) KiB in tmp/ cannot be written): "
                + String(cString: strerror(error.code)), "error": "spool-unavailable"],
                                   headers: [("Retry-After", "60")])
        }
    }

    // MARK: Reports

    func report(_ refusal: ReceiveRefusal, head: HTTPRequestHead, spoolError: SpoolError? = nil) {
        let priority: LogPriority = refusal.status >= 500 ? .error : .warning
        // No method: libmicrohttpd answered the head before it was read.
        let request = head.method.isEmpty ? LogText.escaped(head.path)
            : "\(LogText.escaped(head.method)) \(LogText.escaped(head.path))"
        var message = "\(request) from \(head.client): \(refusal.status) \(refusal.code)"
        if refusal.isRepeatable {
            guard let leftOut = throttle.admit("\(head.client) \(refusal.status)") else { return }
            if leftOut > 0 { message += " (and \(leftOut) more such answers to it since the last entry)" }
        }
        if let spoolError { message += " (\(spoolError))" }
        log.write(LogEntry(priority, message, messageID: MessageID.receiveRefused, fields: [
            ("TXRECON_HTTP_STATUS", String(refusal.status)), ("TXRECON_REASON", refusal.code),
            ("TXRECON_CLIENT", head.client), ("TXRECON_PATH", head.path),
        ]))
    }

    /// A connection from `client` closed unanswered at `limit` (its value,
    /// as read at start): counted, and logged at most once a second per
    /// client and limit.
    func refusedConnection(from client: String, at limit: ConnectionLimits.Limit, of value: Int) {
        reporter.refusedConnection(at: limit)
        guard let leftOut = throttle.admit("\(client) \(limit.rawValue)") else { return }
        var message = "a connection from \(client) was refused: \(limit.setting)\(value) connections "
            + (limit == .connections ? "are open" : "from that address are open") + "; it was closed unanswered"
        if leftOut > 0 { message += " (and \(leftOut) more since the last entry)" }
        log.write(LogEntry(.warning, message, messageID: MessageID.receiveRefused, fields: [
            ("TXRECON_REASON", limit == .connections ? "max-connections" : "max-connections-per-address"),
            ("TXRECON_CLIENT", client),
        ]))
    }

    private func report(spooled name: String, setAside: Rejection?, head: HTTPRequestHead) {
        var fields = [("TXRECON_HTTP_STATUS", "200"), ("TXRECON_FILE", name), ("TXRECON_CLIENT", head.client),
                      ("TXRECON_PATH", head.path)]
        guard let setAside else {
            log.write(LogEntry(.debug, "\(head.path) from \(head.client): spooled as new/\(name)", fields: fields))
            return
        }
        fields.append(("TXRECON_REASON", setAside.code))
        log.write(LogEntry(.warning, "\(head.path) from \(head.client): spooled as new/\(name), which the daemon "
                           + "will set aside in rejected/: \(setAside)", messageID: MessageID.receiveRefused,
                           fields: fields))
    }
}
