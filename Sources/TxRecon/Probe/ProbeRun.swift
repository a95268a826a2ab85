// ProbeRun: `txrecon probe`, the end-to-end check after an install or a
// certificate change. It asks Apple to send a TEST notification (Request a
// Test Notification, with the sweep's key and settings), follows Apple's
// attempt to send it to the notification URL (Get Test Notification Status),
// then the notification through the spool by its notificationUUID: taken by
// the daemon into queue/, and confirmed by the backend (done/), or held
// (hold/, with the backend's reason) or set aside (rejected/, with the
// daemon's). It prints each hop with its time since the start, or the hop
// where it stopped and why.
//
// Runs on one dedicated thread (curl, file reads, sleeps). Needs the
// In-App Purchase key, like the sweep, and DoneRetention= above zero: the
// backend's confirmation is seen as the item in done/. Exit status: 0 only
// when the backend confirmed the notification; 1 when a hop failed or the
// time ran out; 78 for a configuration problem (including Apple's 401).
import Glibc

package enum ProbeRun {
    /// How long the probe follows the notification by default: Apple's
    /// sandbox usually sends within seconds.
    package static let defaultTimeout: Duration = .seconds(120)

    /// Runs the probe with the configuration at `configurationPath`,
    /// printing each hop with `print`; returns the exit status.
    /// `app`: the one app to probe; nil probes every app in turn.
    package static func run(configurationPath: String, app: String? = nil, environment: [String: String], timeout: Duration, print: @escaping @Sendable (String) -> Void) async -> Int32 {
        ProcessHardening.apply()
        do {
            return try await DedicatedThread.run(name: "txrecon-probe") {
                AppRuns.run(configurationPath: configurationPath, only: app, log: PrintedLines(print: print),
                            failed: { stop, log in
                    log.write(LogEntry(.error, stop.reason))
                    return stop.exitStatus
                }) { configuration, _ in
                    let name = configuration.apps.first.map { "probe: app \($0.name) (\($0.bundleID))" }
                    if let name, configuration.apps.count == 1 { print(name) }
                    return Probe(print: print, clock: SystemSweepClock(), timeout: timeout)
                        .run(configuration: configuration, environment: environment)
                }
            }
        } catch {
            print("probe: \(error)")
            return 1
        }
    }
}

/// The probe's problems before any app's run, printed as its hops are.
private struct PrintedLines: LogSink {
    let print: @Sendable (String) -> Void
    func write(_ entry: consuming LogEntry) { print("probe: " + entry.message) }
}

/// One probe, from the request to the backend's answer.
struct Probe {
    static let statusPollInterval: Duration = .seconds(1)
    static let spoolPollInterval: Duration = .milliseconds(200)

    let print: @Sendable (String) -> Void
    let clock: any SweepClock
    let timeout: Duration

    /// - Parameter configuration: one app's settings (AppRuns).
    func run(configuration: Configuration, environment: [String: String]) -> Int32 {
        let tokens: APITokenIssuer
        do {
            tokens = try SweepCredentials.load(for: configuration, environment: environment)
        } catch {
            print("probe: \(error)")
            return ConfigurationError.exitStatus
        }
        guard configuration.spool.doneRetention > .zero else {
            print("probe: \(configuration.path): Spool.DoneRetention= is 0, so done/ keeps a delivery only until the "
                  + "ledger holds it and the backend's confirmation may be gone before the probe looks; set it (the "
                  + "default is 3d) to probe")
            return ConfigurationError.exitStatus
        }
        let settings = configuration.sweep
        let client: AppStoreAPIClient
        do {
            client = try AppStoreAPIClient(baseURL: settings.effectiveBaseURL, tokens: tokens, clock: clock)
        } catch {
            print("probe: \(error)")
            return 1
        }
        let started = clock.now
        let deadline = started + timeout
        print("probe: asking Apple (\(settings.environment.rawValue), \(client.baseURL)) for a test notification; "
              + "following it for up to \(Int(timeout.components.seconds)) s")
        func hop(_ who: String, _ text: String) {
            let elapsed = clock.now - started
            let tenths = elapsed.components.seconds * 10 + elapsed.components.attoseconds / 100_000_000_000_000_000
            let time = "\(tenths / 10).\(tenths % 10)s"
            print(String(repeating: " ", count: max(0, 8 - time.count)) + time + "  "
                  + who + String(repeating: " ", count: max(1, 10 - who.count)) + LogText.singleLine(text, limit: 400))
        }
        func stopped(_ who: String, _ why: String) -> Int32 {
            hop(who, why)
            print("probe: stopped at \(who == "Apple" ? who : "the " + who); the backend has not confirmed "
                  + "the test notification")
            return 1
        }

        let token: String
        switch client.requestTestNotification() {
        case let .answered(value):
            token = value
            hop("Apple", "will send a TEST notification (testNotificationToken \(value))")
        case let .refused(error) where error.status == 401:
            hop("Apple", "refused the request: \(error.summary)")
            print("probe: Apple refused the credentials: check [Sweep] IssuerID=, KeyID=, BundleID= and the key")
            return ConfigurationError.exitStatus
        case let .refused(error):
            return stopped("Apple", "refused the request: \(error.summary)")
        case let .malformed(reason):
            return stopped("Apple", "answered with what is not Apple's answer (\(reason)); check [Sweep] BaseURL=")
        case let .unreachable(reason):
            return stopped("Apple", "could not be reached: \(reason)")
        }

        // Apple's attempt to send it.
        var notification: HistoryNotification?
        while notification == nil {
            switch client.testNotificationStatus(token) {
            case let .answered(status):
                if let attempt = status.sendAttempts.first {
                    let at = Timestamp.rfc3339(milliseconds: attempt.date)
                    guard attempt.result == "SUCCESS" else {
                        return stopped("Apple", "could not deliver it to the notification URL: \(attempt.result) "
                            + "(attempt at \(at)): \(TestNotificationStatus.meaning(of: attempt.result))")
                    }
                    hop("Apple", "sent it to the notification URL; the receiver answered 2xx (attempt at \(at))")
                    notification = status.notification
                }
            case let .refused(error) where error.status == 404 || error.status == 429:
                break  // not sent yet (4040008), or asked to slow down: ask again
            case let .refused(error):
                return stopped("Apple", "refused the status request: \(error.summary)")
            case let .malformed(reason):
                return stopped("Apple", "answered the status request with what is not Apple's answer (\(reason))")
            case .unreachable:
                break  // the network between the probe and Apple; ask again until the deadline
            }
            if notification == nil {
                guard clock.now + Self.statusPollInterval < deadline else {
                    return stopped("Apple", "has not tried to send it within the time; ask again later with the "
                        + "token above, or check App Store Connect's notification URL for \(settings.environment.rawValue)")
                }
                clock.sleep(for: Self.statusPollInterval)
            }
        }
        guard let notification, let uuid = notification.notificationUUID, let key = ItemKey(uuid) else {
            return stopped("Apple", "sent a notification whose payload has no readable notificationUUID")
        }

        // The notification through the spool.
        let layout = SpoolLayout(root: configuration.spool.directory)
        let inspector = SpoolInspector(layout: layout)
        let rejected = RejectedSearch(layout: layout, signedPayload: notification.signedPayload,
                                      since: clock.wallMilliseconds - 600_000)
        var queued = false, warnedNotRunning = false, polls = 0
        hop("receiver", "spooled it; the daemon takes it as \(key) (its notificationUUID)")
        while true {
            switch (try? inspector.show(key))??.location {
            case .done?:
                if !queued { hop("daemon", "verified it and delivered it") }
                hop("backend", "confirmed it: done/\(key.fileName)")
                print("probe: confirmed end to end")
                return 0
            case .hold?:
                let reason = (try? inspector.show(key))??.reason ?? "(no reason file)"
                return stopped("backend", "refused it; the daemon holds it in hold/: \(reason)")
            case .queue?:
                if !queued {
                    queued = true
                    hop("daemon", "verified it and took it into queue/; delivering")
                }
            case nil:
                if polls % 10 == 0, let found = rejected.find() {
                    return stopped("daemon", "set it aside in rejected/\(found.name): \(found.reason)")
                }
            }
            if !warnedNotRunning, !SpoolLock.isHeld(layout) {
                warnedNotRunning = true
                hop("daemon", "does not run on \(layout.root): the notification waits for it (systemctl start txrecon)")
            }
            guard clock.now + Self.spoolPollInterval < deadline else {
                let at = queued ? "backend" : "daemon"
                return stopped(at, queued
                    ? "has not confirmed it within the time; `txrecon show \(key)` tells the attempts"
                    : "has not taken it within the time; see `txrecon status`")
            }
            clock.sleep(for: Self.spoolPollInterval)
            polls += 1
        }
    }
}
