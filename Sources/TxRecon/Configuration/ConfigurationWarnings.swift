// ConfigurationWarnings: values that are legal but almost certainly wrong,
// said at start, at a reload that brings them in, and by check-config. None
// stops the daemon: each can be meant (a test rig, a backend on a private
// network, a notification type Apple added yesterday), but an operator
// should have read it once. Each names the file (and line) to look at.
// Pure: file modes are those the loader recorded (Configuration.files), so a
// reload compares the warnings of two configurations as they were read.
import FoundationEssentials
import Glibc

package enum ConfigurationWarnings {
    /// Shorter than this, an exchange over any network times out.
    static let shortestSensibleTimeout: Duration = .milliseconds(100)

    /// The warnings about what the daemon uses: unchecked signatures, a
    /// timeout no backend meets, secrets sent in clear, a `[Match]` type
    /// Apple does not send, files in the configuration directories that are
    /// not read, two destinations that deliver the same items to one URL.
    package static func daemon(_ configuration: Configuration, secrets: BackendSecrets) -> [String] {
        var warnings: [String] = []
        if let warning = configuration.verificationStartWarning { warnings.append(warning) }
        // App files too: a member could change which app's data is taken,
        // or which key Apple's API is asked with.
        var files = configuration.files
        for file in configuration.apps.flatMap(\.files) where !files.contains(where: { $0.path == file.path }) {
            files.append(file)
        }
        return warnings + groupWritableFiles(files) + backend(configuration, secrets: secrets)
            + match(configuration) + ignoredFiles(configuration) + sharedTargets(configuration)
            + receiptsWithoutTheirFile(configuration)
    }

    /// A receipt's purchases (appstore.receipt) carry only their receipt's
    /// SHA-256; the receipt itself is an item of its own
    /// (appstore.receipt-file). Taken by no destination, the purchases name
    /// a receipt no backend gets and none can verify them on its own.
    private static func receiptsWithoutTheirFile(_ configuration: Configuration) -> [String] {
        let matches = configuration.deliveryConfigurations.map(\.configuration.match)
        let bundleIDs = configuration.apps.map(\.bundleID) + ["(an app not configured)"]
        let orphaned = SignedDataEnvironment.allCases.map(\.rawValue).filter { environment in
            bundleIDs.contains { bundleID in
                matches.contains { $0.takes(.receipt, environment: environment, bundleID: bundleID) }
                    && !matches.contains { $0.takes(.receiptFile, environment: environment, bundleID: bundleID) }
            }
        }
        guard !orphaned.isEmpty else { return [] }
        return ["[Match] Kind= takes receipt purchases (appstore.receipt) from \(orphaned.joined(separator: ", ")) but "
                + "no destination takes their receipts (appstore.receipt-file): each purchase names its receipt by "
                + "receiptSha256 only, so no backend gets the receipt to verify it; add appstore.receipt-file where "
                + "appstore.receipt is"]
    }

    /// The warnings about one further destination, each naming its file.
    package static func destination(_ destination: Destination, secrets: BackendSecrets) -> [String] {
        groupWritableFiles(destination.settings.files)
            + backend(destination.settings, secrets: secrets).map { "\(destination.settings.path): " + $0 }
            + match(destination.settings)
    }

    /// The files read that their group may write: each member can choose
    /// where transactions go. (Writable by every user, the loader refuses
    /// them.)
    private static func groupWritableFiles(_ files: [ConfigurationFile]) -> [String] {
        files.compactMap { file in
            guard file.permissions & 0o020 != 0 else { return nil }
            return "\(file.path) is writable by its group (mode \(ConfigurationLoader.octal(mode_t(file.permissions)))): "
                + "every member can choose where transactions go and which token goes with them; run "
                + "\"chmod g-w \(file.path)\" unless the group is yours alone"
        }
    }

    /// `NotificationType=` values Apple does not document, with the file
    /// and line. A warning, not a refusal: Apple adds types without notice,
    /// and a type it added since this list was written must be usable at
    /// once; but a typo would match no notification, silently.
    private static func match(_ configuration: Configuration) -> [String] {
        let origin = configuration.origins["Match.NotificationType"]
        let place = origin.map { "\($0.file):\($0.line)" } ?? configuration.path
        return configuration.match.undocumentedNotificationTypes.map { type, nearest in
            "\(place): [Match] NotificationType=\(type) is not one of Apple's notification types"
                + (nearest.map { " (did you mean \($0)?)" } ?? "") + ": no notification Apple sends today carries "
                + "it, so it matches none; it is kept as written, for Apple adds types without notice"
        }
    }

    /// The files in txrecon.conf.d/, destinations/ and apps/ that are not read.
    private static func ignoredFiles(_ configuration: Configuration) -> [String] {
        configuration.ignoredFiles.map { path in
            let name = path.split(separator: "/").last.map(String.init) ?? path
            let directory = String(path.dropLast(name.count + 1))
            let what = switch directory {
            case ConfigurationLoader.destinationDirectory(beside: configuration.path): "destination files"
            case ConfigurationLoader.appDirectory(beside: configuration.path): "app files"
            default: "drop-ins"
            }
            return "\(path) is not read: only \(what) named NAME.conf, not hidden, are; remove it, or rename it "
                + "if it is meant to be read"
        }
    }

    /// Two destinations whose `[Backend]` is the same URL (and, for
    /// JetStream, the same subject) and whose `[Match]` can take the same
    /// item: each such item goes there twice, under two names, with two
    /// health records and two sets of retries. A warning, not a refusal:
    /// the backend keeps one copy by its Idempotency-Key, as the delivery
    /// contract asks (JetStream drops the second by its Nats-Msg-Id), so
    /// nothing is applied twice; and the same URL with matches that never
    /// meet (one token for Production, another for Sandbox) is a setup of
    /// its own, never warned about. Named on the later of the two files.
    private static func sharedTargets(_ configuration: Configuration) -> [String] {
        let destinations = configuration.deliveryConfigurations
        var warnings: [String] = []
        for (index, later) in destinations.enumerated() {
            guard let earlier = destinations[..<index].first(where: { earlier in
                target(earlier.configuration.backend) == target(later.configuration.backend)
                    && earlier.configuration.match.overlaps(later.configuration.match)
            }) else { continue }
            let backend = later.configuration.backend
            let (verb, keeper) = backend.isStream
                ? ("published to the same server and subject", "JetStream drops the second by its Nats-Msg-Id")
                : ("sent to the same URL", "the backend keeps one by its Idempotency-Key")
            warnings.append("\(place(of: "Backend.URL", in: later.configuration)): [Backend] URL= is the one of "
                            + "destination \(earlier.name) (\(place(of: "Backend.URL", in: earlier.configuration))), "
                            + "and their [Match] can take the same items: each is \(verb) twice, under two names "
                            + "(\(keeper)); give one its own URL=, or narrow a [Match] so that they never meet")
        }
        return warnings
    }

    /// What a destination delivers to, for comparing two: the URL
    /// (`BackendSettings.comparableURL`), and for JetStream the server
    /// (`natsServer`, whatever the scheme) and its subject.
    private static func target(_ backend: BackendSettings) -> String {
        backend.natsServer.map { $0 + " " + backend.subject } ?? backend.comparableURL
    }

    /// `file:line` where `key` was set, or the file when it was not.
    private static func place(of key: String, in configuration: Configuration) -> String {
        configuration.origins[key].map { "\($0.file):\($0.line)" } ?? configuration.path
    }

    /// The warnings about a `[Backend]`.
    private static func backend(_ configuration: Configuration, secrets: BackendSecrets) -> [String] {
        var warnings: [String] = []
        let backend = configuration.backend
        if backend.timeout < shortestSensibleTimeout {
            warnings.append("[Backend] Timeout=\(TimeSpan.format(backend.timeout)) is under 100ms: almost every "
                            + "attempt will time out and be retried; the default is 10s")
        }
        var sent: [String] = []
        if secrets.bearerToken != nil { sent.append("the bearer token") }
        if secrets.webhookSigningKey != nil { sent.append("signed requests") }
        if !sent.isEmpty, let host = plainHTTPHost(backend.url), !isLoopback(host) {
            warnings.append("[Backend] URL= is plain http:// to \(host): \(sent.joined(separator: " and ")) and every "
                            + "transaction cross the network unencrypted; use https://")
        }
        // Over http:// they are read and never used: no TLS is made, so a
        // backend that relies on mutual TLS alone authenticates nothing.
        let tlsFiles = [("CAFile=", backend.caFile), ("ClientCertificateFile=", backend.clientCertificateFile)]
            .filter { $0.1 != nil }.map(\.0)
        if !tlsFiles.isEmpty, plainHTTPHost(backend.url) != nil {
            warnings.append("[Backend] \(tlsFiles.joined(separator: " and ")) set, but URL= is plain http://: no TLS "
                            + "is made, so \(tlsFiles.count == 1 ? "it is" : "they are") not used; use https://")
        }
        if backend.urlQuery != nil, let file = configuration.origins["Backend.URL"]?.file,
           let mode = configuration.files.last(where: { $0.path == file }).map({ mode_t($0.permissions) }),
           mode & 0o004 != 0 {
            // Kept out of every log (BackendSettings.urlQuerySecrets), so
            // not left to every user of the machine either.
            warnings.append("[Backend] URL= carries a query, which may hold a credential and is kept out of every "
                            + "log, in \(file), which every user can read (mode \(ConfigurationLoader.octal(mode))); "
                            + "run \"chgrp txrecon \(file)\" and \"chmod o-r \(file)\" (the daemon reads it as "
                            + "txrecon)")
        }
        if secrets.bearerToken != nil, let host = plainNATSHost(backend.url), !isLoopback(host) {
            warnings.append("[Backend] URL= is nats:// to \(host): the token and every transaction cross the network "
                            + "unencrypted unless the server insists on TLS; use tls:// to require it")
        }
        return warnings
    }

    /// Apple's limit per app and endpoint in the sandbox, requests a second
    /// (a tenth of production's 50).
    static let sandboxRequestsPerSecond = 5

    /// The warnings about what `txrecon sweep`, `reconcile`, `import` and `lookup` use.
    package static func sweep(_ settings: SweepSettings) -> [String] {
        var warnings: [String] = []
        if let base = settings.baseURL, let host = plainHTTPHost(base), !isLoopback(host) {
            warnings.append("[Sweep] BaseURL= is plain http:// to \(host): the App Store Server API token and the "
                            + "notification history cross the network unencrypted; Apple's servers take https:// only")
        }
        // Only against Apple's own sandbox server: a BaseURL= of its own
        // (a proxy, a test's stand-in) has limits of its own.
        if settings.environment == .sandbox, settings.baseURL == nil,
           settings.maxRequestsPerSecond > sandboxRequestsPerSecond {
            warnings.append("[Sweep] MaxRequestsPerSecond=\(settings.maxRequestsPerSecond) is above the sandbox's "
                            + "limit of \(sandboxRequestsPerSecond) a second: Apple answers 429 and the runs wait; "
                            + "set \(sandboxRequestsPerSecond) with Environment=Sandbox")
        }
        return warnings
    }

    /// The host of an http:// URL; nil for https:// and anything else.
    private static func plainHTTPHost(_ text: String) -> String? { host(of: text, scheme: "http") }

    /// The host of a nats:// URL (TLS only if the server asks); nil for tls://.
    private static func plainNATSHost(_ text: String) -> String? { host(of: text, scheme: "nats") }

    private static func host(of text: String, scheme: String) -> String? {
        guard let url = URL(string: text), url.scheme?.lowercased() == scheme else { return nil }
        return url.host
    }

    /// localhost, ::1, or an IPv4 literal in 127.0.0.0/8: a name that
    /// merely starts with "127." (127.billing.example) is another host.
    private static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased().filter { $0 != "[" && $0 != "]" }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 && UInt32(bigEndian: address.s_addr) >> 24 == 127
    }
}
