// ConfigurationWarnings: values that are legal but almost certainly wrong,
// said at start, at a reload that brings them in, and by check-config. None
// stops the daemon: each can be meant (a test rig, a backend on a private
// network), but an operator should have read it once.
import FoundationEssentials

public enum ConfigurationWarnings {
    /// Shorter than this, an exchange over any network times out.
    static let shortestSensibleTimeout: Duration = .milliseconds(100)

    /// The warnings about what the daemon uses: unchecked signatures, a
    /// timeout no backend meets, secrets sent in clear.
    public static func daemon(_ configuration: Configuration, secrets: BackendSecrets) -> [String] {
        var warnings: [String] = []
        if let warning = configuration.verification.startWarning { warnings.append(warning) }
        return warnings + backend(configuration, secrets: secrets)
    }

    /// The warnings about one further destination, each naming its file.
    public static func destination(_ destination: Destination, secrets: BackendSecrets) -> [String] {
        backend(destination.settings, secrets: secrets).map { "\(destination.settings.path): " + $0 }
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
        if secrets.bearerToken != nil, let host = plainNATSHost(backend.url), !isLoopback(host) {
            warnings.append("[Backend] URL= is nats:// to \(host): the token and every transaction cross the network "
                            + "unencrypted unless the server insists on TLS; use tls:// to require it")
        }
        return warnings
    }

    /// The warnings about what `txrecon sweep` uses.
    public static func sweep(_ settings: SweepSettings) -> [String] {
        guard let base = settings.baseURL, let host = plainHTTPHost(base), !isLoopback(host) else { return [] }
        return ["[Sweep] BaseURL= is plain http:// to \(host): the App Store Server API token and the notification "
                + "history cross the network unencrypted; Apple's servers take https:// only"]
    }

    /// The host of an http:// URL; nil for https:// and anything else.
    private static func plainHTTPHost(_ text: String) -> String? { host(of: text, scheme: "http") }

    /// The host of a nats:// URL (TLS only if the server asks); nil for tls://.
    private static func plainNATSHost(_ text: String) -> String? { host(of: text, scheme: "nats") }

    private static func host(of text: String, scheme: String) -> String? {
        guard let url = URL(string: text), url.scheme?.lowercased() == scheme else { return nil }
        return url.host
    }

    private static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased().filter { $0 != "[" && $0 != "]" }
        return host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host.hasPrefix("127.")
    }
}
