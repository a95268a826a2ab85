// ConfigurationLoader: reads txrecon.conf and its drop-ins into a checked
// `Configuration`.
//
// The main file is applied first, then `<file>.d/*.conf` in name order; a
// later assignment overrides an earlier one and an empty one (`Key=`) puts
// the default back, as in systemd. Every problem is a `ConfigurationError`
// naming the file, the 1-based line and `Section.Key`: a missing or
// unreadable file, a malformed line, an unknown section or key, a key before
// any section, a bad value, and, once everything is applied, a missing
// `Backend.URL` (line nil) or half of a client certificate pair; and a file
// writable by every user (line nil), refused as a secret file is. The first problem stops loading; nothing is logged. Files in the
// drop-in and destination directories that are not read (a backup, a hidden
// file) are recorded in `ignoredFiles` for ConfigurationWarnings.
//
// Further destinations come from `destinations/*.conf` beside the main file
// (`/etc/txrecon/destinations/`), one file per destination as systemd keeps
// one file per unit: each holds `[Backend]`, `[Delivery]` and `[Match]` in
// the main file's syntax, is checked the same way, and starts from the
// defaults, not from the main file's values. Blocks on disk I/O: call it from
// the main thread at start-up or a reload thread, never from async code.

import Glibc

/// Loads the configuration file.
package enum ConfigurationLoader {
    /// Configuration files larger than this are refused, bytes.
    static let maximumFileSize = 1 << 20

    /// The configuration in `path` (default `/etc/txrecon/txrecon.conf`)
    /// and its drop-ins, with `origins` recording where each set key was
    /// set.
    package static func load(path: String) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration(path: path)
        let dropIns = try DropInDirectory.listing(of: path)
        for file in [path] + dropIns.files {
            try apply(file, to: &configuration)
        }
        try checkCompleteness(of: configuration)
        let destinationFiles = try DropInDirectory.listing(in: destinationDirectory(beside: path))
        configuration.destinations = try destinations(in: destinationFiles.files)
        try checkAnsweringDestination(of: configuration)
        let appFiles = try DropInDirectory.listing(in: appDirectory(beside: path))
        configuration.apps = try apps(of: configuration, in: appFiles.files)
        try resolveMatchedApps(of: &configuration)
        // After the apps: a [Match] App= is "every app" until resolved, and
        // two streams split by App= would seem to meet.
        try checkSharedStreams(of: configuration)
        configuration.ignoredFiles = dropIns.ignored + destinationFiles.ignored + appFiles.ignored
        return configuration
    }

    /// The sections a destination file may hold.
    static let destinationSections = ["Backend", "Delivery", "Match"]

    /// The directory of destination files beside the configuration file at `path`.
    package static func destinationDirectory(beside path: String) -> String {
        directory("destinations", beside: path)
    }

    /// The directory of app files beside the configuration file at `path`.
    package static func appDirectory(beside path: String) -> String { directory("apps", beside: path) }

    private static func directory(_ name: String, beside path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return name }
        return String(path[...slash]) + name
    }

    /// The keys an app file may set: what identifies the app, and the
    /// sweep's settings (its bundle id is the app's BundleID=).
    static let appKeys: [String] = ["Verification.BundleID", "Verification.AppAppleID", "Verification.Environment"]
        + ConfigurationKey.all.filter { $0.section == "Sweep" && $0.name != "BundleID" }.map(\.qualifiedName)

    /// The apps: the main file's (when it names a bundle id), then each
    /// `apps/NAME.conf` of `files`, applied over the main file's settings
    /// less its BundleID= and AppAppleID=, each checked: a bundle id, an
    /// environment with Mode=appstore, an App Apple ID for Production, no
    /// bundle id twice, all signed or all unsigned environments.
    private static func apps(of main: Configuration, in files: [String]) throws(ConfigurationError) -> [App] {
        var apps: [App] = []
        if let app = try mainApp(of: main, withAppFiles: !files.isEmpty) { apps.append(app) }
        for file in files {
            let base = String(file.split(separator: "/").last ?? "")
            let name = String(base.dropLast(".conf".count))
            guard DestinationName.isValid(name, reserved: App.mainName) else {
                throw ConfigurationError(
                    file: file, line: nil, key: nil,
                    message: "\"\(name)\" is not an app name; name the file with 1 to 32 lower-case letters, digits, "
                        + "- and _, starting with a letter or digit, and not \(App.mainName) (the main file's app)")
            }
            var settings = main
            settings.path = file
            settings.verification.bundleID = nil
            settings.verification.appAppleID = nil
            settings.sweep.bundleID = nil
            for key in ["Verification.BundleID", "Verification.AppAppleID", "Sweep.BundleID"] {
                settings.origins[key] = nil
                settings.resets[key] = nil
            }
            try apply(file, to: &settings, sections: ["Verification", "Sweep"], keys: appKeys)
            guard let bundleID = settings.verification.bundleID else {
                throw ConfigurationError(file: file, line: nil, key: "Verification.BundleID",
                                         message: "is required in an app file; set BundleID= under [Verification] to "
                                            + "the app's bundle identifier")
            }
            settings.sweep.bundleID = bundleID
            try checkApp(settings, among: apps)
            apps.append(App(name: name, bundleID: bundleID, settings: settings))
        }
        return apps
    }

    /// The main file's app: its [Verification] BundleID=, whose sweep goes by
    /// [Sweep] BundleID= (the same, or, as before apps, unset: then the
    /// app's). Without app files a [Sweep] BundleID= alone is an app too, as
    /// a host that only sweeps has always had; beside app files it must be
    /// the main app's, or it would sweep an app verification does not know.
    private static func mainApp(of main: Configuration, withAppFiles: Bool) throws(ConfigurationError) -> App? {
        let sweepBundleID = main.sweep.bundleID
        guard let bundleID = main.verification.bundleID else {
            guard let sweepBundleID else { return nil }
            if withAppFiles {
                throw main.problem(key: "Sweep.BundleID",
                                   "names an app (\(sweepBundleID)) that [Verification] does not: beside app files, "
                                    + "the main file's app is its [Verification] BundleID=; set that, or remove "
                                    + "[Sweep] BundleID= and give the app a file of its own (apps/NAME.conf)")
            }
            return App(name: App.mainName, bundleID: sweepBundleID, settings: main)
        }
        if withAppFiles, let sweepBundleID, sweepBundleID != bundleID {
            throw main.problem(key: "Sweep.BundleID",
                               "is \(sweepBundleID), but the main file's app is \(bundleID) ([Verification] BundleID=): "
                                + "each app sweeps its own history; remove [Sweep] BundleID=, and give \(sweepBundleID) "
                                + "a file of its own (apps/NAME.conf)")
        }
        var app = App(name: App.mainName, bundleID: bundleID, settings: main)
        if sweepBundleID == nil { app.sweep.bundleID = bundleID }
        return app
    }

    /// One app file's checks against itself and the apps before it.
    private static func checkApp(_ settings: Configuration, among apps: [App]) throws(ConfigurationError) {
        let verification = settings.verification
        let bundleID = verification.bundleID ?? ""
        if let other = apps.first(where: { $0.bundleID == bundleID }) {
            throw settings.problem(key: "Verification.BundleID",
                                   "\(bundleID) is also the bundle id of the app \(other.name) (\(other.path)); each "
                                    + "app is one bundle id: remove one of the two, or correct BundleID=")
        }
        guard verification.mode == .appStore else { return }
        guard !verification.environments.isEmpty else {
            throw settings.problem(key: "Verification.Environment",
                                   "is required with Mode=appstore, in the app file or under [Verification] of the "
                                    + "main file; write \"Production Sandbox\" on a production server")
        }
        if verification.environments.contains(.production), verification.appAppleID == nil {
            let environment = settings.origins["Verification.Environment"]
            let listed = environment.map { " (\($0.file):\($0.line))" } ?? ""
            throw ConfigurationError(
                file: settings.path, line: nil, key: "Verification.AppAppleID",
                message: "is required when Environment= lists Production\(listed), to check the appAppleId of "
                    + "notifications; set AppAppleID= under [Verification] of the app file to the app's Apple ID "
                    + "(App Store Connect, App Information)")
        }
        let signed = verification.environments.contains(where: \.checksSignatures)
        if let other = apps.first(where: {
            let environments = $0.verification.environments
            return !environments.isEmpty && environments.contains(where: \.checksSignatures) != signed
        }) {
            throw settings.problem(key: "Verification.Environment",
                                   "lists \(verification.environments.map(\.rawValue).joined(separator: " ")), but the "
                                    + "app \(other.name) lists \(other.verification.environments.map(\.rawValue).joined(separator: " ")): "
                                    + "a daemon that takes App Store signed data must never take unsigned data (Xcode, "
                                    + "LocalTesting); serve those apps from separate configurations")
        }
    }

    /// `[Match] App=` of each destination names apps that are configured;
    /// each match is given their bundle ids, which it decides on.
    private static func resolveMatchedApps(of configuration: inout Configuration) throws(ConfigurationError) {
        let apps = configuration.apps
        func resolve(_ settings: Configuration) throws(ConfigurationError) -> [String]? {
            guard let names = settings.match.apps else { return nil }
            var bundleIDs: [String] = []
            for name in names {
                guard let app = apps.first(where: { $0.name == name }) else {
                    let known = apps.map(\.name)
                    throw settings.problem(key: "Match.App",
                                           "names no app \"\(name)\"; the apps are " + (known.isEmpty
                                            ? "none (set BundleID= under [Verification], or add apps/NAME.conf)"
                                            : known.joined(separator: ", ")))
                }
                bundleIDs.append(app.bundleID)
            }
            return bundleIDs
        }
        configuration.match.appBundleIDs = try resolve(configuration)
        for index in configuration.destinations.indices {
            let settings = configuration.destinations[index].settings
            configuration.destinations[index].settings.match.appBundleIDs = try resolve(settings)
        }
    }

    /// Each `destinations/NAME.conf` of `files`, read on its own: its own
    /// defaults, its own required URL=, no drop-ins.
    private static func destinations(in files: [String]) throws(ConfigurationError) -> [Destination] {
        var destinations: [Destination] = []
        for file in files {
            let base = String(file.split(separator: "/").last ?? "")
            let name = String(base.dropLast(".conf".count))
            guard DestinationName.isValid(name) else {
                throw ConfigurationError(
                    file: file, line: nil, key: nil,
                    message: "\"\(name)\" is not a destination name; name the file with 1 to 32 lower-case letters, "
                        + "digits, - and _, starting with a letter or digit, and not \(Destination.primaryName) "
                        + "(the main file's [Backend])")
            }
            var settings = Configuration(path: file)
            try apply(file, to: &settings, sections: destinationSections)
            try checkBackend(of: settings)
            destinations.append(Destination(name: name, settings: settings))
        }
        return destinations
    }

    /// `keys`: the only `Section.Key`s the file may set (an app file's);
    /// nil for every key of `sections`.
    private static func apply(_ file: String, to configuration: inout Configuration,
                              sections: [String] = ConfigurationKey.sections,
                              keys: [String]? = nil) throws(ConfigurationError) {
        let contents: RegularFile.Contents
        do {
            contents = try RegularFile.read(file, limit: maximumFileSize)
        } catch {
            let remedy = error == .missing && file == configuration.path
                ? "; create it from the sample txrecon.conf or pass --config PATH" : ""
            throw ConfigurationError(file: file, line: nil, key: nil, message: error.description + remedy)
        }
        // Whoever can write a configuration file chooses where every
        // transaction goes, and with which token: writable by every user,
        // it is refused, as a secret file is (SecretFile). Writable by its
        // group is warned about instead (ConfigurationWarnings): under a
        // umask of 002 files are made so, for a group that is often the
        // user's own.
        let permissions = contents.mode & 0o7777
        if permissions & 0o002 != 0 {
            throw ConfigurationError(
                file: file, line: nil, key: nil,
                message: "is writable by every user (mode \(octal(permissions))): anyone could choose where "
                    + "transactions go and which token goes with them; run \"chmod o-w \(file)\"")
        }
        configuration.files.append(ConfigurationFile(path: file, permissions: UInt32(permissions)))

        var section: String?
        for statement in try INISyntax.statements(in: contents.bytes, file: file) {
            switch statement.kind {
            case .section(let name):
                guard sections.contains(name) else {
                    let known = sections.map { "[\($0)]" }.joined(separator: ", ")
                    let kind = keys == nil ? "a destination file" : "an app file"
                    let what = ConfigurationKey.sections.contains(name) ? "section [\(name)] does not belong in \(kind)"
                        : "unknown section [\(name)]"
                    throw ConfigurationError(file: file, line: statement.line, key: nil,
                                             message: "\(what); the sections are \(known)")
                }
                section = name
            case .assignment(let name, let value):
                guard let section else {
                    let what = looksLikeAKeyName(name) ? "\(name)=" : "a setting"
                    throw ConfigurationError(
                        file: file, line: statement.line, key: nil,
                        message: "\(what) comes before any [Section] header; \(placement(of: name))")
                }
                let qualifiedName = "\(section).\(name)"
                guard let key = ConfigurationKey.byQualifiedName[qualifiedName] else {
                    guard looksLikeAKeyName(name) else {
                        throw ConfigurationError(
                            file: file, line: statement.line, key: nil,
                            message: "unknown key in [\(section)] (its name is not repeated here: it does not look "
                                + "like one, and may be a secret written on a line of its own); "
                                + suggestion(for: name, in: section))
                    }
                    throw ConfigurationError(
                        file: file, line: statement.line, key: qualifiedName,
                        message: "unknown key; \(suggestion(for: name, in: section))")
                }
                if let keys, !keys.contains(qualifiedName) {
                    if qualifiedName == "Sweep.BundleID" {
                        throw ConfigurationError(file: file, line: statement.line, key: qualifiedName,
                                                 message: "an app's sweep goes by its [Verification] BundleID=; remove it")
                    }
                    let mainFile = configuration.files.first?.path ?? "the main file"
                    let taken = keys.map { String($0.split(separator: ".")[1]) + "=" }.joined(separator: ", ")
                    throw ConfigurationError(
                        file: file, line: statement.line, key: qualifiedName,
                        message: "applies to every app, not to one; set it in \(mainFile) (an app file takes \(taken))")
                }
                if value.isEmpty {
                    key.reset(&configuration)
                    configuration.origins[qualifiedName] = nil
                    configuration.resets[qualifiedName] = ConfigurationOrigin(file: file, line: statement.line)
                    continue
                }
                do {
                    try key.assign(value, &configuration)
                } catch {
                    throw ConfigurationError(file: file, line: statement.line, key: qualifiedName, message: error.message)
                }
                configuration.origins[qualifiedName] = ConfigurationOrigin(file: file, line: statement.line)
            }
        }
    }

    /// Checks that need every file applied first.
    private static func checkCompleteness(of configuration: Configuration) throws(ConfigurationError) {
        try checkBackend(of: configuration)
        let receive = configuration.receive
        if receive.idleTimeout.components.attoseconds != 0 {
            // libmicrohttpd counts its connection timeout in whole seconds:
            // 1.9s would silently be 1 s, and 500ms 1 s.
            let origin = configuration.origins["Receive.IdleTimeout"]
            throw ConfigurationError(
                file: origin?.file ?? configuration.path, line: origin?.line, key: "Receive.IdleTimeout",
                message: "is counted in whole seconds (libmicrohttpd's connection timeout), and "
                    + "\(TimeSpan.format(receive.idleTimeout)) is not: make it a whole number of seconds, such as 2s")
        }
        if receive.idleTimeout >= receive.requestTimeout {
            let key = configuration.origins["Receive.IdleTimeout"] != nil ? "Receive.IdleTimeout" : "Receive.RequestTimeout"
            let origin = configuration.origins[key]
            throw ConfigurationError(
                file: origin?.file ?? configuration.path, line: origin?.line, key: key,
                message: "IdleTimeout= (\(receive.idleTimeout)) must be shorter than RequestTimeout= "
                    + "(\(receive.requestTimeout)): a kept-alive connection idle for IdleTimeout= is closed as idle, "
                    + "and one still without a whole request at RequestTimeout= is cut as too slow")
        }
    }

    /// Two JetStream destinations that publish into one stream (the same
    /// server and Stream=) under different subjects, for items both
    /// [Match]es take: the stream drops the second publish of an item as a
    /// duplicate of the first, whatever its subject (its Nats-Msg-Id is the
    /// item's Idempotency-Key, KEY:VERSION, the same for both), and answers
    /// "duplicate" with the first one's sequence: the second destination
    /// would have its consumers get the item only once the duplicate window
    /// has passed (its transport finds the stored message is the other's
    /// and retries), or never where txrecon may not look the message up
    /// (DuplicateAcknowledgement). Refused, not warned about (one subject
    /// for both is: ConfigurationWarnings). The server is compared as
    /// `natsServer` spells it, so that nats:// beside tls://, a default
    /// port left out or a trailing slash do not hide it; and the
    /// credentials as written (the token file, the client certificate):
    /// under other ones a destination may be another NATS account, whose
    /// stream of the same name is another stream (the transport's check of
    /// each duplicate covers one account reached with two credentials).
    private static func checkSharedStreams(of configuration: Configuration) throws(ConfigurationError) {
        let streams = configuration.deliveryConfigurations.filter { $0.configuration.backend.isStream }
        for (index, later) in streams.enumerated() {
            let backend = later.configuration.backend
            guard let earlier = streams[..<index].first(where: { earlier in
                let other = earlier.configuration.backend
                return other.natsServer == backend.natsServer && other.stream == backend.stream
                    && other.bearerTokenFile == backend.bearerTokenFile
                    && other.clientCertificateFile == backend.clientCertificateFile
                    && other.subject != backend.subject && earlier.configuration.match.overlaps(later.configuration.match)
            }) else { continue }
            let origin = later.configuration.origins["Backend.Stream"]
            let earlierOrigin = earlier.configuration.origins["Backend.Stream"]
            throw ConfigurationError(
                file: origin?.file ?? later.configuration.path, line: origin?.line, key: "Backend.Stream",
                message: "is the stream destination \(earlier.name) publishes into too ("
                    + "\(earlierOrigin.map { "\($0.file):\($0.line)" } ?? earlier.configuration.path)), on the same "
                    + "NATS server (\(backend.natsServer ?? backend.displayURL)), under another subject, and their "
                    + "[Match] can take the same items: the stream keeps one message per Nats-Msg-Id (the item's "
                    + "KEY:VERSION) whatever its subject, so one of the two would be told \"duplicate\" and its "
                    + "consumers would not get the item, or only once the duplicate window has passed; give each "
                    + "its own Stream=, or narrow a [Match] so that they never meet")
        }
    }

    /// A `[Backend]` that can be used: URL= set, a whole client certificate pair.
    private static func checkBackend(of configuration: Configuration) throws(ConfigurationError) {
        if configuration.backend.url.isEmpty {
            let emptied = configuration.resets["Backend.URL"]
            throw ConfigurationError(
                file: emptied?.file ?? configuration.path, line: emptied?.line, key: "Backend.URL",
                message: "is required; set URL= under [Backend] to the http:// or https:// address "
                    + "that receives the transactions, or the nats:// (tls://) server of a JetStream stream")
        }
        let certificate = configuration.backend.clientCertificateFile
        let privateKey = configuration.backend.clientKeyFile
        if (certificate == nil) != (privateKey == nil) {
            let (present, absent) = certificate != nil
                ? ("ClientCertificateFile", "ClientKeyFile") : ("ClientKeyFile", "ClientCertificateFile")
            let origin = configuration.origins["Backend.\(present)"]
            throw ConfigurationError(
                file: origin?.file ?? configuration.path, line: origin?.line, key: "Backend.\(present)",
                message: "is set but \(absent)= is not; mutual TLS needs both or neither")
        }
        // What one kind of destination takes and the other has no use for:
        // refused rather than silently ignored (the default spelled out is
        // no mistake).
        let backend = configuration.backend
        let tlsKeys = ["CAFile", "ClientCertificateFile", "ClientKeyFile"]
        let misplaced = backend.isStream
            ? ["SigningSecretFile", "HTTPVersion"] + (backend.streamRequiresTLS ? [] : tlsKeys)
            : (backend.subject == BackendSettings().subject ? [] : ["Subject"]) + ["Stream"]
        if let key = misplaced.first(where: { configuration.origins["Backend.\($0)"] != nil }) {
            let origin = configuration.origins["Backend.\(key)"]
            let message = switch (backend.isStream, tlsKeys.contains(key)) {
            case (true, true):
                "applies to a NATS server over TLS: make URL= tls://HOST:PORT (with nats:// libnats uses TLS only "
                    + "when the server asks for it, checked against the system's CAs), or remove it"
            case (true, false) where key == "HTTPVersion":
                "applies only to an http:// or https:// destination (a JetStream destination speaks NATS); remove it"
            case (true, false):
                "does not apply to a JetStream destination (messages carry no webhook signature; the connection "
                    + "is authenticated by a token from BearerTokenFile=); remove it"
            case (false, _):
                "applies only to a JetStream destination; remove it or make URL= nats://HOST:PORT"
            }
            throw ConfigurationError(file: origin?.file ?? configuration.path, line: origin?.line,
                                     key: "Backend.\(key)", message: message)
        }
        // Only the acknowledgement of a stream named here finishes an item,
        // and nothing is published before it is found capturing the
        // subjects: without a name, any reply shaped like an acknowledgement
        // would do, from anyone who may subscribe to them.
        // libcurl 7.88 (Debian 12's) fails every request after the first on
        // a reused cleartext HTTP/2 connection (curl issue 10634, fixed in
        // 7.89): refused here rather than retried for ever at run time.
        if backend.httpVersion == .http2, backend.url.lowercased().hasPrefix("http://"),
           !CurlLibrary.reusesPriorKnowledgeConnections {
            let origin = configuration.origins["Backend.HTTPVersion"]
            throw ConfigurationError(
                file: origin?.file ?? configuration.path, line: origin?.line, key: "Backend.HTTPVersion",
                message: "2 over http:// needs libcurl 7.89 or later; this one (\(CurlLibrary.version)) fails every "
                    + "request after the first on a cleartext HTTP/2 connection (curl issue 10634). Use an https:// "
                    + "URL= (HTTP/2 by ALPN), or HTTPVersion=1.1")
        }
        if configuration.backend.isStream, configuration.backend.stream == nil {
            let url = configuration.origins["Backend.URL"]
            throw ConfigurationError(
                file: url?.file ?? configuration.path, line: nil, key: "Backend.Stream",
                message: "is required with a nats:// or tls:// URL=: name the JetStream stream that must store the "
                    + "items (it must capture \(configuration.backend.subject).>), such as Stream=APPSTORE; only "
                    + "its acknowledgement finishes an item")
        }
    }

    /// `[Outbox] AnswersFrom=`, when set, names a destination that answers
    /// over HTTP: a stream's acknowledgement carries no body to take an
    /// answer from. (Left at its default with a stream as `[Backend]`, no
    /// answer ever comes, as with a backend that gives none.)
    private static func checkAnsweringDestination(of configuration: Configuration) throws(ConfigurationError) {
        let name = configuration.outbox.answersFrom
        guard let origin = configuration.origins["Outbox.AnswersFrom"] else { return }
        let match = configuration.deliveryConfigurations.first { $0.name == name }
        guard let match else {
            let names = configuration.deliveryConfigurations.map(\.name).joined(separator: ", ")
            throw ConfigurationError(file: origin.file, line: origin.line, key: "Outbox.AnswersFrom",
                                     message: "names no destination (there are: \(names)); name the one whose 2xx "
                                        + "answer to a CONSUMPTION_REQUEST carries consumptionInformation")
        }
        if match.configuration.backend.isStream {
            throw ConfigurationError(file: origin.file, line: origin.line, key: "Outbox.AnswersFrom",
                                     message: "names \(name), a JetStream destination, whose acknowledgement carries "
                                        + "no answer; name an HTTP destination")
        }
    }

    /// A file mode as chmod takes it: `0644`.
    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// Whether the text before a line's `=` is shaped like a key name (ASCII
    /// letters only, at most 32), and so safe to repeat in an error. A
    /// secret put alone on a line (`whsec_…=`, a token) is text before an
    /// `=` too; with a digit, `_`, `-`, `+` or `/`, or longer, it is not
    /// repeated.
    private static func looksLikeAKeyName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 32 else { return false }
        return name.utf8.allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
        }
    }

    /// Where a key written before any section header belongs.
    private static func placement(of name: String) -> String {
        let homes = ConfigurationKey.all.filter { $0.name == name }.map { "[\($0.section)]" }
        return homes.isEmpty
            ? "put it under its section header"
            : "put it under \(homes.joined(separator: " or "))"
    }

    /// What to write instead of an unknown key: the same key in another
    /// section, the right spelling, or the list of keys of this section.
    private static func suggestion(for name: String, in section: String) -> String {
        let keys = ConfigurationKey.all.filter { $0.section == section }
        if let home = ConfigurationKey.all.first(where: { $0.name == name }) {
            return "\(name)= belongs under [\(home.section)]"
        }
        if let spelled = keys.first(where: { $0.name.lowercased() == name.lowercased() }) {
            return "keys are case-sensitive: write \(spelled.name)="
        }
        return "[\(section)] accepts " + keys.map { "\($0.name)=" }.joined(separator: ", ")
    }
}
