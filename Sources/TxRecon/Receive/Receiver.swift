// Receiver: `txrecon receive`, the HTTP receiver's life, beside the daemon
// in the Postfix way: it only ever writes into the spool as `txrecon submit`
// does (tmp/, fsync, rename into new/, fsync new/), never moves anything
// else and never talks to the backend.
//
//   start:   configuration, roots, upload token (exit 78 when invalid) ->
//            the listening socket (systemd's, or Listen=) -> serving ->
//            READY=1, then the watchdog ping from a thread of its own
//   SIGHUP:  RELOADING=1, configuration, roots and token read again and
//            applied, or refused with a log line; READY=1
//   SIGTERM, SIGINT: STOPPING=1, stop accepting, requests in flight finish
//            (at most RequestTimeout=), exit 0
//
// Reports: the lifecycle and each request that is not a plain 200 in the
// journal; its counts in STATUS=, `<spool>/receive/status` and
// txrecon-receive.prom (ReceiveReporter).
import Dispatch
import Glibc

package enum Receiver {
    /// Runs the receiver until it is told to stop; returns the exit status.
    package static func run(configurationPath: String, environment: [String: String], version: String) async -> Int32 {
        let redactor = SecretRedactor()
        let log = RedactingLogSink(LogSinks.standard(environment: environment), redactor: redactor)
        let health = SystemdNotifier(log: log)
        ProcessHardening.apply()

        var configuration: Configuration
        let settings: Reception.Settings
        do {
            (configuration, settings) = try load(configurationPath)
        } catch {
            log.write(LogEntry(.error, "configuration error: \(error)"))
            return Daemon.ExitStatus.configuration
        }
        redactor.replace(with: [settings.uploadToken].compactMap { $0 })
        let layout = SpoolLayout(root: configuration.spool.directory)
        warnOfUncheckedSignatures(configuration, log: log)

        let stateDirectory: ReceiverStateDirectory
        let listener: (socket: Int32, passed: Bool)
        let commit: GroupCommit
        do {
            guard access(layout.new, W_OK | X_OK) == 0 else {
                log.write(LogEntry(.error, "the spool's new/ (\(layout.new)) cannot be written: "
                                   + "\(String(cString: strerror(errno))); the daemon (txrecon run) or "
                                   + "systemd-tmpfiles --create makes the spool, owned by the txrecon user"))
                return Daemon.ExitStatus.failure
            }
            stateDirectory = try ReceiverStateDirectory(layout: layout)
            // Under receive/lock: no other receiver writes these now.
            let leftovers = try TemporaryOwner.receiver.removeLeftovers(in: layout)
            if leftovers > 0 { log.write(TemporaryOwner.receiver.leftoversRemoved(leftovers, in: layout)) }
            listener = try ListeningSocket.open(configuration.receive.listen)
            commit = try GroupCommit(layout: layout, grouped: environment["TXRECON_RECEIVE_NO_GROUP_COMMIT"] != "1")
        } catch {
            log.write(LogEntry(.error, "\(error)"))
            return Daemon.ExitStatus.failure
        }
        let listening = listener.passed ? "the socket systemd passed" : "\(configuration.receive.listen)"
        let reporter = ReceiveReporter(listening: listening, directory: stateDirectory,
                                       metricsDirectory: configuration.metrics.textfileDirectory, version: version,
                                       health: health, log: log)
        let reception = Reception(settings: settings, layout: layout, commit: commit, reporter: reporter, log: log)
        let receive = configuration.receive
        let server = HTTPServer(
            limits: HTTPServer.Limits(connections: receive.maxConnections,
                                      connectionsPerAddress: receive.maxConnectionsPerAddress,
                                      idleTimeout: receive.idleTimeout, requestTimeout: receive.requestTimeout,
                                      maximumBodySize: configuration.spool.maxFileSize,
                                      bodyBudget: BodyBudget.limit(forMaximumBodySize: configuration.spool.maxFileSize)),
            screen: { reception.screen($0) }, handle: { reception.handle($0) },
            onDeadline: { client in
                reporter.cutAtDeadline()
                log.write(LogEntry(.warning, "a connection from \(client) sent no whole request within "
                                   + "RequestTimeout= of its opening or its last answer; it was closed",
                                   messageID: MessageID.receiveRefused,
                                   fields: [("TXRECON_REASON", "request-timeout"), ("TXRECON_CLIENT", client)]))
            },
            onAnswer: { reporter.answered($0, after: $1) },
            onRefused: { reception.report($1, head: $0) },
            onConnectionRefused: { reception.refusedConnection(from: $0, at: $1, of: $2) })

        let (signals, signalInput) = AsyncStream.makeStream(of: Int32.self)
        do {
            guard let commandLoop = CommandThread.loop else {
                preconditionFailure("Receiver.run outside CommandThread.run: no loop to watch signals on")
            }
            try DaemonSignals.watch(on: commandLoop) { signalInput.yield($0) }
            try server.start(listening: listener.socket)
            if let interval = health.watchdogPingInterval {
                // No ping while a body has waited longer than a ping interval
                // for its writes and fsyncs: a disk that stopped answering
                // then ends in the watchdog's restart, with its journal entry.
                try DedicatedThread.start(name: "txrecon-watchdog") {
                    while true {
                        // nanosleep, not usleep: a WatchdogSec= of hours
                        // would overflow usleep's 32-bit microseconds.
                        var pause = timespec(tv_sec: Int(interval.components.seconds),
                                             tv_nsec: Int(interval.components.attoseconds / 1_000_000_000))
                        var left = timespec()
                        while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
                        if let stalled = commit.longestUnderWay(), stalled > interval { continue }
                        health.notify("WATCHDOG=1")
                    }
                }
            }
        } catch {
            log.write(LogEntry(.error, "cannot serve: \(error)"))
            return Daemon.ExitStatus.failure
        }
        reporter.flushNow()
        health.notify("READY=1\nSTATUS=" + ReceiveReporter.line(reporter.statistics, listening: listening))
        log.write(LogEntry(.info, "txrecon \(version) receiving on \(listening), spooling into \(layout.root)/new",
                           messageID: MessageID.started))

        loop: for await number in signals {
            switch number {
            case SIGHUP:
                health.notify("RELOADING=1")
                do {
                    var (nextConfiguration, next) = try load(configurationPath)
                    let waiting = ConfigurationKey.keepRunningValues(of: configuration, in: &nextConfiguration,
                                                                     reads: Self.reads)
                    next.receive = nextConfiguration.receive
                    redactor.replace(with: [next.uploadToken].compactMap { $0 })
                    warnOfUncheckedSignatures(nextConfiguration, log: log)
                    reception.reconfigure(next)
                    server.setMaximumBodySize(nextConfiguration.spool.maxFileSize)
                    configuration = nextConfiguration
                    var message = "configuration reloaded from \(configurationPath)"
                    if !waiting.isEmpty {
                        message += "; \(waiting.joined(separator: ", ")) changed but take effect only at a restart "
                            + "(systemctl restart txrecon-receive), the running values stay until then"
                    }
                    log.write(LogEntry(waiting.isEmpty ? .info : .notice, message, messageID: MessageID.reloaded))
                } catch {
                    log.write(LogEntry(.error, "reload refused, the running configuration stays: \(error)",
                                       messageID: MessageID.reloadRefused))
                }
                health.notify("READY=1")
            case SIGTERM, SIGINT:
                log.write(LogEntry(.info, "\(number == SIGTERM ? "SIGTERM" : "SIGINT") received: stopping; "
                                   + "requests in flight finish", messageID: MessageID.stopping))
                break loop
            default:
                continue
            }
        }
        health.notify("STOPPING=1")
        let socketIsOurs = server.stop(grace: receive.requestTimeout)
        if !listener.passed && socketIsOurs { close(listener.socket) }
        reporter.stop()
        let statistics = reporter.statistics
        log.write(LogEntry(.info, "stopped after \(statistics.requests) requests, \(statistics.spooled) spooled"))
        return Daemon.ExitStatus.success
    }

    /// The keys the receiver reads of those that take effect only at a
    /// restart: its spool, its [Receive] (the socket, the limits and the
    /// timeouts its server was made with) and where its metrics go (its
    /// reporter is made at start).
    static func reads(_ key: ConfigurationKey) -> Bool {
        key.section == "Receive" || key.qualifiedName == "Spool.Directory"
            || key.qualifiedName == "Metrics.TextfileDirectory"
    }

    /// The daemon's warning when signatures go unchecked (Mode=none, Xcode),
    /// and more so here: it is what anyone who can reach the receiver may
    /// have spooled.
    private static func warnOfUncheckedSignatures(_ configuration: Configuration, log: any LogSink) {
        guard let warning = configuration.verificationStartWarning else { return }
        log.write(LogEntry(.warning, warning + "; txrecon receive spools what anyone who can reach it sends"))
    }

    /// The configuration and what the reception needs of it: the policy
    /// (roots read) and the upload token (its file read once, its
    /// permissions checked).
    static func load(_ path: String) throws(ConfigurationError) -> (Configuration, Reception.Settings) {
        let configuration = try ConfigurationLoader.load(path: path)
        let policy = try SignedDataPolicy.load(for: configuration)
        let token = try uploadToken(for: configuration)
        return (configuration, Reception.Settings(receive: configuration.receive,
                                                  acceptEnvelopes: configuration.verification.acceptEnvelopes,
                                                  policy: policy, uploadToken: token,
                                                  apps: configuration.apps.map(\.name)))
    }

    /// The token in `UploadTokenFile=` (its permissions checked), nil when
    /// the key is unset; also what `check-config` checks of it.
    package static func uploadToken(for configuration: Configuration) throws(ConfigurationError) -> String? {
        guard let file = configuration.receive.uploadTokenFile else { return nil }
        let origin = configuration.origins["Receive.UploadTokenFile"]
        do {
            let bytes = try SecretFile.read(file)
            guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw ConfigurationError(file: origin?.file ?? configuration.path, line: origin?.line,
                                         key: "Receive.UploadTokenFile",
                                         message: "the token file holds a space, a control character, a second "
                                            + "line or non-ASCII text; it must hold the token alone on one line")
            }
            if let tooShort = SecretFile.tokenTooShort(bytes) {
                throw ConfigurationError(file: origin?.file ?? configuration.path, line: origin?.line,
                                         key: "Receive.UploadTokenFile", message: tooShort)
            }
            return String(decoding: bytes, as: UTF8.self)
        } catch let error as ConfigurationError {
            throw error
        } catch let error as SecretFile.Failure {
            throw ConfigurationError(file: origin?.file ?? configuration.path, line: origin?.line,
                                     key: "Receive.UploadTokenFile", message: error.message(path: file))
        } catch {
            throw ConfigurationError(file: configuration.path, line: nil, key: "Receive.UploadTokenFile",
                                     message: "\(error)")
        }
    }
}
