// ConfigurationSummary: the settings in force as `Key=value` lines, for
// `txrecon check-config`. Secrets are shown only as set or not set.

public enum ConfigurationSummary {
    public static func lines(_ configuration: Configuration, secrets: BackendSecrets) -> [String] {
        let spool = configuration.spool, backend = configuration.backend, delivery = configuration.delivery
        var lines = [
            "[Spool]",
            "Directory=\(spool.directory)",
            "MaxFileSize=\(spool.maxFileSize)",
            "DoneRetention=\(TimeSpan.format(spool.doneRetention))",
            "[Backend]",
            "URL=\(backend.url)",
            "Timeout=\(TimeSpan.format(backend.timeout))",
            "BearerToken: \(secrets.bearerToken == nil ? "none" : "set (from \(backend.bearerTokenFile ?? "credential backend-token"))")",
            "SigningSecret: \(secrets.webhookSigningKey == nil ? "none" : "set (from \(backend.signingSecretFile ?? ""))")",
        ]
        if let caFile = backend.caFile { lines.append("CAFile=\(caFile)") }
        if let certificate = backend.clientCertificateFile { lines.append("ClientCertificateFile=\(certificate)") }
        if let key = backend.clientKeyFile { lines.append("ClientKeyFile=\(key)") }
        lines += [
            "[Delivery]",
            "RetryDelays=\(delivery.retrySchedule.delays.map(TimeSpan.format).joined(separator: " "))",
            "MaxConcurrentDeliveries=\(delivery.maxConcurrentDeliveries)",
        ]
        return lines
    }
}
