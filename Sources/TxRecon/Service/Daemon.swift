// Daemon: `txrecon run`, the service's life from start to exit.
//
//   start:   configuration and root certificates (exit 78 when invalid;
//            a warning when signatures go unchecked) -> spool directories and
//            lock -> engine rebuilt from queue/ and hold/ -> ctl/ and new/
//            taken -> READY=1, then the watchdog ping from the engine's loop
//   SIGHUP:  RELOADING=1, configuration and roots read again and applied, or refused
//            with a log line while the old one stays; READY=1
//   SIGTERM, SIGINT: STOPPING=1, intake stops, attempts in flight get a
//            bounded time to end, nothing undelivered is finished, the
//            metrics file (if any) says txrecon_up 0; exit 0
//   new/ or ctl/ removed or made inaccessible while running: exit 1 so
//            systemd restarts us
//
// Reports: the lifecycle in the journal (started, reloaded, stopping) and
// every failure that ends the process, with its exit status.
import CGlibcExtras
import Glibc

package enum Daemon {
    /// Exit statuses, as systemd and scripts see them.
    package enum ExitStatus {
        package static let success: Int32 = 0
        package static let failure: Int32 = 1
        package static let configuration: Int32 = ConfigurationError.exitStatus
    }

    /// What wakes the daemon's main loop.
    private enum Signal: Sendable {
        case stop(String)
        case reload
        case lost(String)
        /// Test builds only (TXRECON_TEST_FREEZE=1): wedge the engine so the
        /// watchdog must fire.
        case freeze
    }

    /// Runs the daemon until it is told to stop; returns the exit status.
    package static func run(configurationPath: String, environment: [String: String], version: String) async -> Int32 {
        // Everything logged goes through the redactor, which learns the
        // secrets once they are read.
        let redactor = SecretRedactor()
        let log = RedactingLogSink(LogSinks.standard(environment: environment), redactor: redactor)
        let health = SystemdNotifier(log: log)
        ProcessHardening.apply()

        let configuration: Configuration
        let secrets: [BackendSecrets]
        let verification: SignedDataPolicy?
        do {
            (configuration, secrets, verification) = try loadConfiguration(configurationPath, environment: environment)
        } catch {
            log.write(LogEntry(.error, "configuration error: \(error)"))
            return ExitStatus.configuration
        }
        redactor.replace(with: secrets.flatMap(\.redactable) + ProxyCredentials.secrets(in: environment))
        let deliveries = configuration.deliveryConfigurations
        for warning in warnings(configuration, secrets: secrets) { log.write(LogEntry(.warning, warning)) }
        if let missing = verification?.receiptRootsMissing { log.write(LogEntry(.warning, missing)) }

        let layout = SpoolLayout(root: configuration.spool.directory)
        let fansOut = deliveries.count > 1
        let lock: SpoolLock
        let inboxesOnDisk: [String]
        do {
            try layout.createMissingDirectories()
            lock = try SpoolLock.acquire(layout)
            // Under the lock: no other daemon writes these now.
            let leftovers = try TemporaryOwner.daemon.removeLeftovers(in: layout)
            if leftovers > 0 { log.write(TemporaryOwner.daemon.leftoversRemoved(leftovers, in: layout)) }
            if fansOut {
                for (name, _) in deliveries { try layout.destination(name).createMissingDestinationDirectories() }
            }
            if !fansOut { try DeliveryDestination.returnPrimaryCopies(layout) }
            inboxesOnDisk = try DeliveryDestination.inboxesOnDisk(layout)
        } catch {
            log.write(LogEntry(.error, "cannot use the spool \(layout.root): \(error)"))
            return ExitStatus.failure
        }

        let startedAt = Timestamp.nowMilliseconds()
        let publisher = StatusPublisher(health: health, statusFile: layout.statusFile, startedAt: startedAt, log: log)
        let metrics = configuration.metrics.textfileDirectory.map {
            MetricsExporter(directory: $0, startedAt: startedAt, version: version, log: log)
        }
        let board = DestinationStatusBoard(names: deliveries.map(\.name))

        // The engine's own thread also pings the watchdog, between its jobs:
        // a wedged engine stops the pings and systemd restarts the daemon.
        // Every destination's engine runs on it.
        let executor: ThreadExecutor
        do {
            executor = try ThreadExecutor(name: "txrecon-engine", tickInterval: health.watchdogPingInterval) { health.notify("WATCHDOG=1") }
        } catch {
            log.write(LogEntry(.error, "\(error)"))
            return ExitStatus.failure
        }
        // receipts/: one store and one library of parsed receipts for intake,
        // every engine and the ledger's catch-up from done/; the reaper keeps
        // each receipt while anything in any destination's directories names
        // it, configured or not.
        let receiptReaper = ReceiptReaper(layout: layout, retention: configuration.spool.doneRetention, log: log)
        let receipts = ReceiptLibrary(store: ReceiptStore(layout: layout, readLimit: configuration.spool.maxFileSize,
                                                           stored: { receiptReaper.noteStored() }))
        // DoneRetention=0 too keeps each delivered snapshot in done/ until
        // the ledger holds it: until then done/ is the supersede rule's
        // only record of it, and the ledger's catch-up source.
        let spools = deliveries.map { name, _ in Spool(layout: fansOut ? layout.destination(name) : layout) }
        let ledger = LedgerService(settings: LedgerService.Settings(
            path: configuration.spool.ledgerFile, retention: configuration.spool.ledgerRetention,
            destinations: zip(deliveries, spools).map { ($0.name, $1) },
            reader: ledgerReader(configuration, verification: verification, receipts: receipts),
            maximumFileSize: configuration.spool.maxFileSize), log: log,
            observe: { status in
                let all = board.record(ledger: status)
                publisher.publish(all)
                metrics?.publish(all)
            })
        let answers = AnswerTaker(AnswerTaker.Settings(configuration))
        var destinations: [DeliveryDestination] = []
        for (index, ((name, settings), secret)) in zip(deliveries, secrets).enumerated() {
            let spool = spools[index]
            let destinationLog = DestinationLogSink(inner: log, name: name, namesMessages: fansOut)
            let reaper = DoneReaper(directory: spool.layout.done, retention: configuration.spool.doneRetention,
                                    durableThrough: { ledger.durableThrough }, log: destinationLog)
            let transport: any DestinationTransport
            do {
                transport = try DestinationTransports.make(settings.backend, secrets: secret,
                                                           workers: settings.delivery.maxConcurrentDeliveries,
                                                           loop: executor, log: destinationLog)
            } catch {
                log.write(LogEntry(.error, "cannot set up the client of \(name): \(error)"))
                return ExitStatus.failure
            }
            let engine = DeliveryEngine(
                spool: spool, settings: engineSettings(settings, environment: environment, verification: verification),
                transport: transport,
                prepare: preparer(version: version, secrets: secret),
                clock: SystemClock(), log: destinationLog, executor: executor, redactor: redactor,
                destination: name, ledger: ledger, receipts: receipts, answers: answers,
                publish: { status in
                    _ = board.record(ledger: ledger.status)
                    let all = board.record(status, at: index)
                    publisher.publish(all)
                    metrics?.publish(all)
                    reaper.observe(finished: status.delivered + status.superseded)
                })
            destinations.append(DeliveryDestination(name: name, spool: spool, transport: transport, engine: engine,
                                                    reaper: reaper))
        }
        do {
            // Before anything reads receipts/: a receipt the reaper had aside
            // when the last process ended is named by some part still, and an
            // upload or page set aside for its split is split again.
            _ = try receipts.store.restoreAtStart()
            let putBack = try Spool(layout: layout).restoreAsideDrops()
            if putBack > 0 {
                log.write(LogEntry(.notice, "\(putBack) receipt upload(s) or history page(s) whose split the last "
                                   + "process did not finish are back in new/, split again (parts it made are repeats)"))
            }
            try Outbox(spool: layout.root).prepare()
            for destination in destinations { destination.reaper.putBackLeftAside() }
            try ledger.start()
        } catch {
            log.write(LogEntry(.error, "\(error)"))
            return ExitStatus.failure
        }
        for destination in destinations {
            do {
                try await destination.engine.start()
            } catch {
                log.write(LogEntry(.error, "cannot read the spool \(layout.root): \(error)"))
                return ExitStatus.failure
            }
            destination.reaper.start()
        }
        receiptReaper.start()
        // Restoring a large queue/ lists and reads every file once: hand the
        // memory that took back to the kernel now, rather than keep it for
        // the months the daemon runs (with 100,000 queued, RSS at READY
        // 61 -> 55 MiB; bench/FINDINGS.md).
        _ = malloc_trim(0)
        DeliveryDestination.reportLeftovers(layout, configured: fansOut ? deliveries.map(\.name) : [], log: log)

        let watcher: InboxWatcher
        do {
            watcher = try InboxWatcher(layout: layout)
        } catch {
            log.write(LogEntry(.error, "cannot watch the spool: \(error)"))
            return ExitStatus.failure
        }
        let intakeSpool = fansOut ? Spool(layout: layout, fanOutInboxes: inboxesOnDisk)
            : destinations[0].spool.withFanOutInboxes(inboxesOnDisk)
        let intake = Intake(spool: intakeSpool,
                            routes: destinations.map { DeliveryRoute(name: $0.name, engine: $0.engine, spool: $0.spool) },
                            watcher: watcher, settings: intakeSettings(configuration, verification: verification), log: log,
                            confirmedVersion: { ledger.confirmedVersion(at: $0, of: $1) }, receipts: receipts)

        let (signals, signalInput) = AsyncStream.makeStream(of: Signal.self)
        let allowFreeze = environment["TXRECON_TEST_FREEZE"] == "1"
        signal(SIGPIPE, SIG_IGN)
        guard let commandLoop = CommandThread.loop else {
            preconditionFailure("Daemon.run outside CommandThread.run: no loop to watch signals on")
        }
        do throws(DaemonSignals.WatchError) {
            try DaemonSignals.watch(on: commandLoop) { number in
                switch number {
                case SIGTERM: signalInput.yield(.stop("SIGTERM"))
                case SIGINT: signalInput.yield(.stop("SIGINT"))
                case SIGHUP: signalInput.yield(.reload)
                case SIGUSR2 where allowFreeze: signalInput.yield(.freeze)
                default: break
                }
            }
        } catch {
            log.write(LogEntry(.error, "\(error)"))
            return ExitStatus.failure
        }

        let intakeStarted = await withCheckedContinuation { (started: CheckedContinuation<ThreadStartError?, Never>) in
            do throws(ThreadStartError) {
                try intake.start(ready: { started.resume(returning: nil) }, lost: { signalInput.yield(.lost($0)) })
            } catch {
                started.resume(returning: error)
            }
        }
        if let intakeStarted {
            log.write(LogEntry(.error, "\(intakeStarted)"))
            return ExitStatus.failure
        }
        for (index, destination) in destinations.enumerated() {
            publisher.publish(board.record(await destination.engine.currentStatus, at: index))
        }
        publisher.flushNow()
        health.notify("READY=1")
        let targets = zip(deliveries, destinations).map { delivery, destination in
            fansOut ? "\(destination.name) \(delivery.configuration.backend.displayURL) (\(delivery.configuration.match.summary))"
                : "backend \(delivery.configuration.backend.displayURL)"
        }
        log.write(LogEntry(.info, "txrecon \(version) ready: spool \(layout.root), \(targets.joined(separator: ", "))",
                           messageID: MessageID.started))

        var current = configuration
        var exitStatus = ExitStatus.success
        loop: for await signal in signals {
            switch signal {
            case .reload:
                health.notify("RELOADING=1")
                current = await reload(current, path: configurationPath, environment: environment, version: version,
                                       destinations: destinations, intake: intake, ledger: ledger, receipts: receipts,
                                       redactor: redactor, log: log)
                answers.update(AnswerTaker.Settings(current))
                health.notify("READY=1")
            case let .stop(name):
                log.write(LogEntry(.info, "\(name) received: stopping", messageID: MessageID.stopping))
                break loop
            case let .lost(problem):
                log.write(LogEntry(.critical, "\(problem); exiting so that systemd restarts txrecon "
                                   + "(a missing directory is recreated at start)"))
                exitStatus = ExitStatus.failure
                break loop
            case .freeze:
                log.write(LogEntry(.warning, "test freeze requested: the engine stops answering"))
                await destinations[0].engine.freezeForTesting()
            }
        }

        health.notify("STOPPING=1")
        intake.stop()
        for destination in destinations { await destination.engine.stop() }
        for (index, destination) in destinations.enumerated() {
            _ = board.record(await destination.engine.currentStatus, at: index)
        }
        let final = board.current
        publisher.publish(final)
        publisher.flushNow()
        metrics?.stop(final: final)
        for destination in destinations {
            destination.reaper.stop()
            destination.transport.shutdown()
        }
        // After the engines: every confirmation they reported is written.
        ledger.stop()
        receiptReaper.stop()
        executor.shutdown()
        withExtendedLifetime(lock) {}
        log.write(LogEntry(.info, "stopped"))
        return exitStatus
    }

    /// How the ledger's catch-up reads done/: as the supersede rule does.
    private static func ledgerReader(_ configuration: Configuration, verification: SignedDataPolicy?,
                                     receipts: ReceiptLibrary) -> StoredItemReader {
        StoredItemReader(acceptEnvelopes: configuration.verification.acceptEnvelopes, policy: verification,
                         receipts: receipts)
    }

    // MARK: Reload

    /// Reads the configuration again and applies it; what takes effect only
    /// at a restart keeps its running value, and the log says which keys
    /// wait for one. Returns the configuration now in force.
    private static func reload(_ current: Configuration, path: String, environment: [String: String], version: String,
                               destinations: [DeliveryDestination], intake: Intake, ledger: LedgerService,
                               receipts: ReceiptLibrary, redactor: SecretRedactor,
                               log: any LogSink) async -> Configuration {
        var next: Configuration
        let secrets: [BackendSecrets]
        let verification: SignedDataPolicy?
        do {
            (next, secrets, verification) = try loadConfiguration(path, environment: environment)
        } catch {
            log.write(LogEntry(.error, "reload refused, the running configuration stays: \(error)",
                               messageID: MessageID.reloadRefused))
            return current
        }
        guard next.destinations.map(\.name) == current.destinations.map(\.name) else {
            // The engines are made at start, one per destination.
            log.write(LogEntry(.error, "reload refused, the running configuration stays: destinations were added to or "
                               + "removed from \(ConfigurationLoader.destinationDirectory(beside: path))/, which takes "
                               + "a restart (systemctl restart txrecon)", messageID: MessageID.reloadRefused))
            return current
        }
        if let switched = transportSwitch(from: current, to: next) {
            log.write(LogEntry(.error, "reload refused, the running configuration stays: \(switched) changes between "
                               + "http://, https://, nats:// and tls://, which takes a restart (systemctl restart "
                               + "txrecon): the destination's transport, TLS settings and HTTP version are made for "
                               + "its URL= at start", messageID: MessageID.reloadRefused))
            return current
        }
        let waiting = keepRestartOnlySettings(of: current, in: &next)
        let before = warnings(current, secrets: secrets)
        for warning in warnings(next, secrets: secrets) where !before.contains(warning) {
            log.write(LogEntry(.warning, warning))
        }
        redactor.replace(with: secrets.flatMap(\.redactable) + ProxyCredentials.secrets(in: environment))
        intake.reconfigure(intakeSettings(next, verification: verification))
        for ((delivery, secret), destination) in zip(zip(next.deliveryConfigurations, secrets), destinations) {
            let settings = delivery.configuration
            await destination.engine.reconfigure(settings: engineSettings(settings, environment: environment,
                                                                          verification: verification),
                                                 transport: destination.transport,
                                                 prepare: preparer(version: version, secrets: secret)) {
                destination.transport.update(settings: settings.backend, secrets: secret)
            }
        }
        // The catch-up from done/ reads as the engines now do: a snapshot of
        // an app added by this reload is recorded, not skipped as foreign.
        ledger.reconfigure(reader: ledgerReader(next, verification: verification, receipts: receipts),
                           maximumFileSize: next.spool.maxFileSize)
        var message = "configuration reloaded from \(path)"
        if !waiting.isEmpty {
            message += "; \(waiting.joined(separator: ", ")) changed but take effect only at a restart "
                + "(systemctl restart txrecon), the running values stay until then"
        }
        log.write(LogEntry(waiting.isEmpty ? .info : .notice, message, messageID: MessageID.reloaded))
        return next
    }

    /// The URL= (of a destination, named) whose scheme `next` changes, or
    /// nil. Not kept until a restart as other keys are: the rest of the
    /// new file was written for the new scheme (a nats:// destination's
    /// Stream=, an https:// one's CAFile= and SigningSecretFile=, HTTP/2 by
    /// ALPN), and the running transport with the new file's settings would
    /// fail every delivery, or send without its signature.
    static func transportSwitch(from current: Configuration, to next: Configuration) -> String? {
        func scheme(_ backend: BackendSettings) -> Substring {
            backend.url.lowercased().prefix { $0 != ":" }
        }
        if scheme(next.backend) != scheme(current.backend) { return "URL=" }
        for destination in next.destinations {
            guard let running = current.destinations.first(where: { $0.name == destination.name })?.settings,
                  scheme(running.backend) != scheme(destination.settings.backend) else { continue }
            return "URL= of \(destination.name)"
        }
        return nil
    }

    /// Puts the running values of the settings a reload cannot change into
    /// `next`; returns the keys whose new values wait for a restart. Which
    /// keys those are is ConfigurationKey's (`restartOnly`), of the sections
    /// the daemon reads, for the main file and for each destination's file.
    /// (A URL= whose scheme changes refuses the reload: `transportSwitch`.)
    static func keepRestartOnlySettings(of current: Configuration, in next: inout Configuration) -> [String] {
        var waiting = ConfigurationKey.keepRunningValues(of: current, in: &next, reads: { daemonSections.contains($0.section) })
        for index in next.destinations.indices {
            let name = next.destinations[index].name
            guard let running = current.destinations.first(where: { $0.name == name })?.settings else { continue }
            waiting += ConfigurationKey.keepRunningValues(of: running, in: &next.destinations[index].settings,
                                                          reads: { ConfigurationLoader.destinationSections.contains($0.section) })
                .map { "\($0) of \(name)" }
        }
        return waiting
    }

    /// The sections whose keys the daemon reads.
    private static let daemonSections: Set<String> = ["Spool", "Backend", "Delivery", "Match", "Verification", "Metrics",
                                                       "Outbox"]

    // MARK: Pieces

    /// What start and a reload warn about: `[Backend]` and the
    /// verification, then each further destination, naming its file.
    private static func warnings(_ configuration: Configuration, secrets: [BackendSecrets]) -> [String] {
        ConfigurationWarnings.daemon(configuration, secrets: secrets[0])
            + zip(configuration.destinations, secrets.dropFirst()).flatMap(ConfigurationWarnings.destination)
    }

    /// The configuration, the secrets and the root certificates it names, as
    /// start and reload read them.
    /// The secrets are `[Backend]`'s, then each further destination's.
    private static func loadConfiguration(_ path: String, environment: [String: String])
        throws(ConfigurationError) -> (Configuration, [BackendSecrets], SignedDataPolicy?) {
        let configuration = try ConfigurationLoader.load(path: path)
        var secrets = [try BackendSecrets.load(for: configuration, environment: environment)]
        for destination in configuration.destinations {
            secrets.append(try BackendSecrets.load(for: destination, environment: environment))
        }
        return (configuration, secrets, try SignedDataPolicy.load(for: configuration))
    }

    /// The engine's settings; `environment`'s TXRECON_TEST_HIGH_WATER (tests
    /// only) lowers the high-water mark (and the low one to 90 % of it), so
    /// that a test can fill an engine with a few dozen items.
    static func engineSettings(_ configuration: Configuration, environment: [String: String],
                               verification: SignedDataPolicy?) -> DeliveryEngine.Settings {
        var settings = engineSettings(configuration)
        settings.acceptEnvelopes = configuration.verification.acceptEnvelopes
        settings.verification = verification
        settings.apps = configuration.appDirectory
        if let text = environment["TXRECON_TEST_HIGH_WATER"], let mark = Int(text), mark > 1 {
            settings.highWater = mark
            settings.lowWater = mark * 9 / 10
        }
        return settings
    }

    static func engineSettings(_ configuration: Configuration) -> DeliveryEngine.Settings {
        DeliveryEngine.Settings(schedule: configuration.delivery.retrySchedule,
                                maxConcurrentDeliveries: configuration.delivery.maxConcurrentDeliveries,
                                maxFileSize: configuration.spool.maxFileSize,
                                stopGrace: min(configuration.backend.timeout + .seconds(1), .seconds(20)),
                                probeSchedule: configuration.backend.probeSchedule,
                                maxRate: configuration.backend.maxRate,
                                statusInterval: DeliveryEngine.busyStatusInterval)
    }

    static func intakeSettings(_ configuration: Configuration, verification: SignedDataPolicy?) -> Intake.Settings {
        Intake.Settings(maximumFileSize: configuration.spool.maxFileSize,
                        acceptEnvelopes: configuration.verification.acceptEnvelopes, verification: verification,
                        matches: configuration.deliveryConfigurations.map(\.configuration.match),
                        apps: configuration.appDirectory)
    }

    static func preparer(version: String, secrets: BackendSecrets) -> DeliveryEngine.RequestPreparer {
        let builder = RequestBuilder(softwareVersion: version, secrets: secrets)
        return { item, attempt, receivedAt, now in
            builder.request(for: item, attempt: attempt, receivedAt: receivedAt, signedAt: now / 1000)
        }
    }
}
