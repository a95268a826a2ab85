// App: one of the apps an installation serves, from `apps/NAME.conf` beside
// the main file, or the main file's own app (`main`: its [Verification]
// BundleID=, today's single-app configuration).
//
// An app's `settings` is the whole configuration as that app's commands see
// it: the main file's, with the app file's [Verification] (BundleID=,
// AppAppleID=, Environment=) and [Sweep] applied on top. An app file starts
// from the main file's Environment= and [Sweep] (the team's key: IssuerID=,
// KeyID=, PrivateKeyFile=, and the pace), never from its BundleID= or
// AppAppleID=, which are each app's own; its sweep's bundle id is its
// BundleID=. What applies to every app (Mode=, the root certificates,
// AcceptEnvelopes=) stays in the main file. ConfigurationLoader reads and
// checks the files; `lookup` is how the rest of txrecon names the app a
// verified item belongs to.

/// One app the installation serves.
package struct App: Sendable, Equatable {
    /// The file's name without `.conf`, or `main`: its name in the journal
    /// (`TXRECON_APP=`), STATUS, the metrics' `app` label, `[Match] App=` and
    /// the commands' `--app`.
    package var name: String
    /// The app's bundle identifier, as its signed data carries it.
    package var bundleID: String
    /// The file the app came from: its own, or the main file.
    package var path: String
    /// [Verification] and [Sweep] as the app's file left them, with where
    /// each key was set (the main file's origins, then the app file's).
    package var verification: VerificationSettings
    package var sweep: SweepSettings
    var origins: [String: ConfigurationOrigin]
    var resets: [String: ConfigurationOrigin]
    var files: [ConfigurationFile]

    /// The app `settings` describes: the main configuration with the app's
    /// file applied.
    init(name: String, bundleID: String, settings: Configuration) {
        self.name = name
        self.bundleID = bundleID
        path = settings.path
        verification = settings.verification
        sweep = settings.sweep
        origins = settings.origins
        resets = settings.resets
        files = settings.files
    }

    /// The name of the main file's app.
    package static let mainName = "main"
}

/// The apps of a configuration by bundle id: which app a verified item
/// belongs to. Built from the configuration at start and reload.
package struct AppDirectory: Sendable, Equatable {
    private var names: [String: String]
    /// Every app's name, in the configuration's order.
    package let allNames: [String]

    package init(_ apps: [App]) {
        names = Dictionary(apps.map { ($0.bundleID, $0.name) }, uniquingKeysWith: { first, _ in first })
        allNames = apps.map(\.name)
    }

    /// The name of the app whose bundle id is `bundleID`; nil for an item
    /// that names none (an envelope) or an app not configured (possible
    /// only with Mode=none).
    package func name(forBundleID bundleID: String?) -> String? {
        guard let bundleID else { return nil }
        return names[bundleID]
    }

    /// The app of `item`.
    package func name(of item: Item) -> String? { name(forBundleID: item.fields.bundleId) }
}

extension Configuration {
    /// The warning for the log at start (and check-config) when signatures
    /// go unchecked, for the main file or any app (apps never mix signed
    /// and unsigned environments, so one warning says it); nil otherwise.
    package var verificationStartWarning: String? {
        if let warning = verification.startWarning { return warning }
        for app in apps where app.name != App.mainName {
            if let warning = VerificationSettings.startWarning(mode: verification.mode,
                                                               environments: app.verification.environments,
                                                               of: app.name) { return warning }
        }
        return nil
    }

    /// The whole configuration `app`'s commands (sweep, probe, reconcile,
    /// import, lookup, answer) run with: this one, with the app's
    /// [Verification] and [Sweep] and `apps` holding `app` alone, so that a
    /// command given it goes through that app only.
    package func settings(for app: App) -> Configuration {
        var settings = self
        settings.path = app.path
        settings.verification = app.verification
        settings.sweep = app.sweep
        settings.origins = app.origins
        settings.resets = app.resets
        settings.files = app.files
        settings.apps = [app]
        return settings
    }

    /// The apps this configuration serves, by name.
    package var appDirectory: AppDirectory { AppDirectory(apps) }

    /// The app `name`, nil when there is none.
    package func app(named name: String) -> App? { apps.first { $0.name == name } }
}
