// Configuration: the typed form of txrecon.conf and its drop-ins.
//
// Built once by `ConfigurationLoader`, which validates every value while
// building it; code that holds a Configuration never sees an invalid one.
// Secrets (the bearer token, the signing secret) are not held here: only the
// paths. `BackendSecrets.load(for:environment:)` reads them once, checking
// their permissions.

/// Everything the daemon and the CLI need from the configuration file.
package struct Configuration: Sendable, Equatable {
    /// The file this configuration was read from (drop-ins come from
    /// `<file>.d/*.conf`).
    package var path: String
    package var spool = SpoolSettings()
    package var backend = BackendSettings()
    package var delivery = DeliverySettings()
    package var verification = VerificationSettings()
    package var metrics = MetricsSettings()
    /// Which items `[Backend]` receives (`[Match]`); every item by default.
    package var match = DestinationMatch()
    /// The further destinations, one per file in `destinations/` beside
    /// this file, in name order; empty when there is none (one `[Backend]`,
    /// the spool as it always was).
    package var destinations: [Destination] = []
    /// The apps served: the main file's (`main`, when its [Verification]
    /// or [Sweep] names a BundleID=), then one per file in `apps/` beside
    /// this file, in name order. Empty with Mode=none and no bundle id.
    package var apps: [App] = []
    /// Every file read into this configuration, in the order applied: the
    /// main file and its drop-ins (a destination's: its file), each with
    /// its permissions as read, so that the warnings about them are those
    /// of the files this configuration came from. Empty unless built by
    /// `ConfigurationLoader`.
    package var files: [ConfigurationFile] = []
    /// Entries of the drop-in directory and of destinations/ that are not
    /// read, as full paths: an editor's backup (`review.conf~`), a hidden
    /// file (`.review.conf`), anything not named `*.conf`. Warned about
    /// (ConfigurationWarnings), never applied.
    package var ignoredFiles: [String] = []
    /// Read only by `txrecon sweep`.
    package var sweep = SweepSettings()
    /// Read only by `txrecon reconcile`.
    package var reconcile = ReconcileSettings()
    /// `[Outbox]`: Apple's answers the daemon writes and `txrecon answer` sends.
    package var outbox = OutboxSettings()
    /// Read only by `txrecon receive`.
    package var receive = ReceiveSettings()
    /// Where each key that is not at its default was last set, by
    /// `Section.Key` (e.g. `"Backend.BearerTokenFile"`), so that checks made
    /// after loading, such as reading the secret files, can name the file
    /// and line. Empty unless built by `ConfigurationLoader`.
    package var origins: [String: ConfigurationOrigin] = [:]
    /// Where a key was last emptied (`Key=` with no value, which restores
    /// its default), by `Section.Key`: a required key emptied in a drop-in
    /// is blamed on that line.
    package var resets: [String: ConfigurationOrigin] = [:]

    package init(path: String) { self.path = path }

    package static let defaultPath = "/etc/txrecon/txrecon.conf"
}

/// One further destination: `destinations/NAME.conf`, which holds the
/// `[Backend]`, `[Delivery]` and `[Match]` sections of the main file's
/// syntax for it. `settings` is a Configuration read from that file alone;
/// only those three sections (and `origins`) mean anything in it.
package struct Destination: Sendable, Equatable {
    /// The file's name without `.conf`: the destination's name in the
    /// journal, STATUS, metrics and the spool (`destinations/NAME/`).
    package var name: String
    package var settings: Configuration

    package init(name: String, settings: Configuration) {
        self.name = name
        self.settings = settings
    }

    /// The name of the destination `[Backend]` of the main file is.
    package static let primaryName = "backend"

    /// The systemd credential that holds its token when BearerTokenFile= is
    /// unset: `NAME-token`, as `backend-token` is `[Backend]`'s.
    package var tokenCredential: String { name + "-token" }
}

/// A configuration file as it was read.
package struct ConfigurationFile: Sendable, Equatable {
    package var path: String
    /// Its permission bits when it was read (`0o640`).
    package var permissions: UInt32

    package init(path: String, permissions: UInt32) {
        self.path = path
        self.permissions = permissions
    }
}

/// The assignment a setting came from: the main file or a drop-in.
package struct ConfigurationOrigin: Sendable, Equatable {
    package var file: String
    /// 1-based.
    package var line: Int

    package init(file: String, line: Int) {
        self.file = file
        self.line = line
    }
}

/// `[Spool]`
package struct SpoolSettings: Sendable, Equatable {
    /// `Directory=`: the spool root. Default `/var/spool/txrecon`.
    package var directory = "/var/spool/txrecon"
    /// `MaxFileSize=`: larger drops are rejected unread, and the receiver
    /// answers larger bodies 413. Bytes; default 8 MiB, at most 1 GiB. A
    /// transaction or notification is a few KiB; the default is set by the
    /// largest input, a StoreKit 1 receipt upload: a customer's history of
    /// 5,000 purchases is about 2.8 MB of base64, and 8 MiB takes about
    /// 14,900 purchases of Apple's size (AppReceipt.maximumPurchases allows
    /// 16,384).
    package var maxFileSize: Int = 8 << 20
    /// `DoneRetention=`: how long delivered and superseded items stay in
    /// done/. Default 3 days; zero removes them at once.
    package var doneRetention: Duration = .seconds(3 * 86_400)
    /// `LedgerFile=`: the ledger of what each destination confirmed (SQLite).
    /// Default `/var/lib/txrecon/ledger.sqlite3` (systemd's StateDirectory=,
    /// 0700): it holds appAccountTokens, personal data, and is derived from
    /// done/, so it lives apart from the spool the producers' group opens.
    package var ledgerFile = "/var/lib/txrecon/ledger.sqlite3"
    /// `LedgerRetention=`: a key whose last confirmation is older is
    /// forgotten. Default 2 years: longer than a yearly subscription's
    /// whole life between two renewals and Apple's 180-day history, so a
    /// stale snapshot of anything Apple can still send is recognised.
    package var ledgerRetention: Duration = .seconds(730 * 86_400)

    package init() {}
}

/// `[Backend]`
package struct BackendSettings: Sendable, Equatable {
    /// `URL=`: where items are POSTed (http or https). Required.
    package var url = ""
    /// `Timeout=`: the whole exchange, connect included. Default 10 s.
    package var timeout: Duration = .seconds(10)
    /// `HTTPVersion=`: `1.1` (the default), or `2` for many deliveries
    /// multiplexed over one connection (http:// and https:// only).
    package var httpVersion = HTTPVersion.http1_1
    /// `BearerTokenFile=`: a file holding the token sent as
    /// `Authorization: Bearer`. When unset, the systemd credential
    /// `backend-token` is used if `$CREDENTIALS_DIRECTORY` has it.
    package var bearerTokenFile: String?
    /// `SigningSecretFile=`: a `whsec_…` Standard Webhooks secret; when set,
    /// every attempt is signed.
    package var signingSecretFile: String?
    /// `CAFile=`: PEM bundle that replaces the system trust store for
    /// https://, and is added to it for tls:// (libnats loads the system's).
    package var caFile: String?
    /// `ClientCertificateFile=` and `ClientKeyFile=`: PEM client identity for
    /// mutual TLS (https:// and tls://); both or neither.
    package var clientCertificateFile: String?
    package var clientKeyFile: String?
    /// `ProbeDelays=`: while the backend fails, only one request at a time
    /// (a probe) goes to it, this long apart. Default `1s 2s 5s 10s`, the
    /// last repeating.
    package var probeSchedule = RetrySchedule.probing
    /// `MaxRate=`: requests a second at most (a token bucket, one second's
    /// worth saved up). Default unset: no limit.
    package var maxRate: Double?
    /// `Subject=`: nats:// and tls:// only; each item is published to this subject, a
    /// dot, and its key (as the spool names it: `%XX` for `.`, `*`, `>`,
    /// spaces). Default `txrecon`.
    package var subject = "txrecon"
    /// `Stream=`: nats:// and tls:// only, and required there; the stream
    /// that must capture `SUBJECT.>` and store the items. Nothing is
    /// published while it does not (checked at each connection and
    /// reconnect), and only its acknowledgement finishes an item. No default.
    package var stream: String?

    package init() {}

    /// Whether URL= is a NATS server (nats:// or tls://): items are
    /// published to JetStream.
    package var isStream: Bool { url.lowercased().hasPrefix("nats://") || streamRequiresTLS }

    /// Whether URL= is a NATS server that must be spoken to over TLS
    /// (tls://); with nats:// libnats uses TLS only when the server asks.
    package var streamRequiresTLS: Bool { url.lowercased().hasPrefix("tls://") }

    /// URL= as logs and check-config show it: a query, which may carry a
    /// credential, stands as `?<redacted>`.
    package var displayURL: String {
        guard urlQuery != nil, let mark = url.firstIndex(of: "?") else { return url }
        return url[...mark] + SecretRedactor.placeholder
    }

    /// The query of URL= (after `?`, before any `#`), which some backends
    /// take a key in; kept out of every output. nil when there is none.
    var urlQuery: String? {
        guard let mark = url.firstIndex(of: "?") else { return nil }
        let query = url[url.index(after: mark)...].prefix { $0 != "#" }
        return query.isEmpty ? nil : String(query)
    }

    /// URL= for comparing two HTTP destinations': everything before the
    /// path (scheme://host:port) in lower case, the path and query as
    /// written. Stream destinations are compared by `natsServer`.
    var comparableURL: String {
        let start = url.firstRange(of: "://")?.upperBound ?? url.startIndex
        let authorityEnd = url[start...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? url.endIndex
        return url[..<authorityEnd].lowercased() + url[authorityEnd...]
    }

    /// The NATS server a nats:// or tls:// URL= reaches, as `host:port`, for
    /// telling whether two destinations publish to one server: the host in
    /// lower case (an IPv6 address keeps its brackets), the port libnats
    /// fills in (4222) when there is none; the scheme is dropped (nats://
    /// and tls:// are the same server, spoken to with or without TLS
    /// insisted on), and so are a user, a path and a trailing slash, which
    /// libnats ignores. Nothing is resolved (this is read without the
    /// network): localhost and 127.0.0.1, or two nodes of one cluster, stay
    /// two servers, which is why the transport also confirms a duplicate
    /// acknowledgement (DuplicateAcknowledgement). One server only: libnats
    /// takes URL= as one URL, not a comma-separated list. nil for http(s)://.
    var natsServer: String? {
        guard isStream, let start = url.firstRange(of: "://")?.upperBound else { return nil }
        var authority = url[start...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        var port: Substring = ""
        let hostEnd = authority.hasPrefix("[") ? authority.firstIndex(of: "]").map(authority.index(after:))
            : authority.firstIndex(of: ":")
        if let hostEnd {
            host = authority[..<hostEnd]
            port = authority[hostEnd...].drop { $0 == ":" }
        }
        return host.lowercased() + ":" + (Int(port).map(String.init) ?? "4222")
    }

    /// What of URL= must never be shown: the whole query, and the values a
    /// backend may name alone when it refuses one ("invalid api key XYZ"),
    /// as written and percent-decoded: those of a parameter named like a
    /// credential (key, token, secret, sig, auth, pass, code), and any of
    /// 16 characters or more. Shorter plain values (`source=txrecon`) are
    /// left alone: redacted, every log line naming them would be blanked.
    var urlQuerySecrets: [String] {
        guard let query = urlQuery else { return [] }
        var secrets = [query]
        let credentialNames = ["key", "token", "secret", "sig", "auth", "pass", "code"]
        for parameter in query.split(whereSeparator: { $0 == "&" || $0 == ";" }) {
            guard let equals = parameter.firstIndex(of: "=") else { continue }
            let name = parameter[..<equals].lowercased()
            let value = String(parameter[parameter.index(after: equals)...])
            guard value.utf8.count >= 16 || credentialNames.contains(where: { name.contains($0) }) else { continue }
            secrets.append(value)
            if let decoded = Self.percentDecoded(value), decoded != value { secrets.append(decoded) }
        }
        return secrets
    }

    /// A query value with `+` as a space and each `%XX` as its byte; nil
    /// when that is not UTF-8.
    private static func percentDecoded(_ value: String) -> String? {
        var bytes: [UInt8] = []
        var input = value.utf8[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "%"), input.count >= 2,
               input.prefix(2).allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }),
               let code = UInt8(String(decoding: input.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(code)
                input = input.dropFirst(2)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// `[Delivery]`
package struct DeliverySettings: Sendable, Equatable {
    /// `RetryDelays=`: default `2s 5s 15s 30s 1min 5min`, the last repeating.
    package var retrySchedule = RetrySchedule.standard
    /// `MaxConcurrentDeliveries=`: attempts in flight at once, across
    /// different keys. Default 8, at most 64: each connection waits for the
    /// backend's answer and then for the item's rename, so fewer leave the
    /// backend idle in between (bench/FINDINGS.md), and a backend that takes
    /// 20 ms an answer still gets 400 items a second.
    package var maxConcurrentDeliveries = 8

    package init() {}
}

/// `[Metrics]`
package struct MetricsSettings: Sendable, Equatable {
    /// `TextfileDirectory=`: where to keep `txrecon.prom` for node_exporter's
    /// textfile collector (e.g. `/var/lib/prometheus/node-exporter`).
    /// Default unset: no metrics file.
    package var textfileDirectory: String?

    package init() {}
}

/// A configuration problem: names the file, line and key. The daemon and the
/// CLI exit with status 78 (EX_CONFIG) on one.
package struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    package var file: String
    /// 1-based; nil when the problem is not on one line (a missing required key).
    package var line: Int?
    /// `Section.Key`, or nil for a syntax error.
    package var key: String?
    package var message: String

    package init(file: String, line: Int?, key: String?, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    package var description: String {
        var location = file
        if let line { location += ":\(line)" }
        if let key { return "\(location): \(key): \(message)" }
        return "\(location): \(message)"
    }

    /// sysexits.h EX_CONFIG
    package static let exitStatus: Int32 = 78
}

extension Configuration {
    /// Every destination's configuration, `[Backend]` (this one) first: a
    /// further destination's is this one with its `[Backend]`, `[Delivery]`,
    /// `[Match]` and their origins, and its file as `path`.
    package var deliveryConfigurations: [(name: String, configuration: Configuration)] {
        [(Destination.primaryName, self)] + destinations.map { destination in
            var merged = self
            merged.path = destination.settings.path
            merged.backend = destination.settings.backend
            merged.delivery = destination.settings.delivery
            merged.match = destination.settings.match
            merged.origins = destination.settings.origins
            merged.resets = destination.settings.resets
            merged.files = destination.settings.files
            merged.ignoredFiles = []
            merged.destinations = []
            return (destination.name, merged)
        }
    }
}
