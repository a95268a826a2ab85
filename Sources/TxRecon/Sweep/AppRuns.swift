// AppRuns: how the commands that talk to Apple's API (sweep, probe,
// reconcile, import, lookup) go through a team's apps: Apple's tokens, rate
// limits and histories are per app, so each app gets a run of its own, with
// its own settings (Configuration.settings(for:)), state (SpoolLayout.app)
// and log entries marked TXRECON_APP=NAME, one app after the other; or the
// one `--app NAME` chooses. A configuration without apps (no BundleID=
// anywhere) is run once as it is, so that the command says what is missing
// as it always did. The exit status is the most severe of the runs': 78
// (a configuration to fix), then 1, then 75 (the next run resumes).

package enum AppRuns {
    /// Runs `body` for each app of the configuration at `path`, or for
    /// `only`; `failed` reports a stop before any run (the configuration
    /// does not load, `only` names no app) and gives its exit status.
    /// `what`, when set, names what a run of one app takes (an import's
    /// customers), and several apps without `only` are refused with it.
    /// `enough` ends the turn early once a run's status says so (a look-up
    /// one app answered).
    static func run(configurationPath path: String, only: String?, log: any LogSink, oneAppFor what: String? = nil,
                    enough: (Int32) -> Bool = { _ in false }, combined: ([Int32]) -> Int32 = mostSevere,
                    failed: (SweepStop, any LogSink) -> Int32,
                    _ body: (Configuration, any LogSink) -> Int32) -> Int32 {
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.load(path: path)
        } catch {
            return failed(SweepStop(kind: .configuration, reason: error.description), log)
        }
        let apps: [App]
        if let only {
            guard let app = configuration.app(named: only) else {
                let names = configuration.apps.map(\.name)
                return failed(SweepStop(kind: .configuration, reason: "--app \(only): \(configuration.path) names no "
                    + "such app; the apps are " + (names.isEmpty ? "none" : names.joined(separator: ", "))), log)
            }
            apps = [app]
        } else if let what, configuration.apps.count > 1 {
            return failed(SweepStop(kind: .configuration, reason: "\(configuration.path) serves "
                + "\(configuration.apps.count) apps (\(configuration.apps.map(\.name).joined(separator: ", "))); name the "
                + "app \(what) with --app NAME"), log)
        } else {
            apps = configuration.apps
        }
        guard !apps.isEmpty else { return body(configuration, log) }
        var statuses: [Int32] = []
        for app in apps {
            let status = body(configuration.settings(for: app), AppLogSink(inner: log, name: app.name))
            if enough(status) { return status }
            statuses.append(status)
        }
        return combined(statuses)
    }

    /// How many runs `run` makes of the configuration at `path` for
    /// `only`, so that a run's time is shared among them (AppTurns): 1 for
    /// one app, for a configuration without apps and for one that does not
    /// load (`run` reads it again and reports what is wrong with it).
    static func count(configurationPath path: String, only: String?) -> Int {
        guard only == nil, let configuration = try? ConfigurationLoader.load(path: path) else { return 1 }
        return max(configuration.apps.count, 1)
    }

    /// 78, then 1 (or any other failure), then 75, then 0.
    static func mostSevere(_ statuses: [Int32]) -> Int32 {
        if statuses.contains(ConfigurationError.exitStatus) { return ConfigurationError.exitStatus }
        if let failure = statuses.first(where: { $0 != 0 && $0 != SweepStop.temporaryExitStatus }) { return failure }
        return statuses.contains(SweepStop.temporaryExitStatus) ? SweepStop.temporaryExitStatus : 0
    }

    /// The state layout of the app a configuration from `run` is for.
    static func layout(of configuration: Configuration) -> SpoolLayout {
        let layout = SpoolLayout(root: configuration.spool.directory)
        return configuration.apps.count == 1 ? layout.app(configuration.apps[0].name) : layout
    }
}

/// Marks every entry of one app's run with TXRECON_APP=NAME, and starts its
/// message with the name, so that a person reading the plain log of a run
/// through several apps can tell them apart.
struct AppLogSink: LogSink {
    let inner: any LogSink
    let name: String

    func write(_ entry: consuming LogEntry) {
        entry.message = name + ": " + entry.message
        entry.fields.append(("TXRECON_APP", name))
        inner.write(entry)
    }
}
