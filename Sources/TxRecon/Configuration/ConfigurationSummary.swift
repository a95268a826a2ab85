// ConfigurationSummary: the settings in force as `Key=value` lines, for
// `txrecon check-config`. Secrets are shown only as set or not set; each
// trusted root by its subject and SHA-256 fingerprint; [Sweep] and [Reconcile] only when
// something in it is set, and its key file only by name (it is read by
// `txrecon sweep`, not here); each further destination after the rest.

package enum ConfigurationSummary {
    /// `verification` is what SignedDataPolicy.load made of the configuration.
    /// `destinationSecrets`: each further destination's, in order.
    package static func lines(_ configuration: Configuration, secrets: BackendSecrets,
                             verification: SignedDataPolicy?, destinationSecrets: [BackendSecrets] = []) -> [String] {
        let spool = configuration.spool
        var lines = [
            "[Spool]",
            "Directory=\(spool.directory)",
            "MaxFileSize=\(spool.maxFileSize)",
            "DoneRetention=\(TimeSpan.format(spool.doneRetention))",
            "LedgerFile=\(spool.ledgerFile)",
            "LedgerRetention=\(TimeSpan.format(spool.ledgerRetention))",
        ]
        lines += deliveryLines(configuration, secrets: secrets, credential: BackendSecrets.tokenCredentialName)
        lines += verificationLines(configuration.verification, policy: verification)
        lines += appLines(configuration)
        if let directory = configuration.metrics.textfileDirectory {
            lines += ["[Metrics]", "TextfileDirectory=\(directory)"]
        }
        if configuration.origins.keys.contains(where: { $0.hasPrefix("Sweep.") }) {
            lines += sweepLines(configuration.sweep)
        }
        if configuration.origins.keys.contains(where: { $0.hasPrefix("Sweep.") || $0.hasPrefix("Reconcile.") }) {
            lines += ["[Reconcile]", "FullCycle=\(TimeSpan.format(configuration.reconcile.fullCycle))"]
        }
        for (destination, secrets) in zip(configuration.destinations, destinationSecrets) {
            lines.append("Destination \(destination.name) (\(destination.settings.path)):")
            lines += deliveryLines(destination.settings, secrets: secrets, credential: destination.tokenCredential)
                .map { "  " + $0 }
        }
        return lines
    }

    /// One destination's [Backend], [Delivery] and [Match].
    private static func deliveryLines(_ configuration: Configuration, secrets: BackendSecrets,
                                      credential: String) -> [String] {
        let backend = configuration.backend, delivery = configuration.delivery
        var lines = [
            "[Backend]",
            "URL=\(backend.displayURL)",
            "Timeout=\(TimeSpan.format(backend.timeout))",
            "BearerToken: \(secrets.bearerToken == nil ? "none" : "set (from \(backend.bearerTokenFile ?? "credential \(credential)"))")",
            "SigningSecret: \(secrets.webhookSigningKey == nil ? "none" : "set (from \(backend.signingSecretFile ?? ""))")",
        ]
        if let caFile = backend.caFile { lines.append("CAFile=\(caFile)") }
        if let certificate = backend.clientCertificateFile { lines.append("ClientCertificateFile=\(certificate)") }
        if let key = backend.clientKeyFile { lines.append("ClientKeyFile=\(key)") }
        if !backend.isStream { lines.append("HTTPVersion=\(backend.httpVersion.rawValue)") }
        if backend.isStream {
            lines.append("Subject=\(backend.subject)")
            lines.append("Stream=\(backend.stream ?? "none")")
            lines.append("TLS: " + (backend.streamRequiresTLS ? "required (tls://)" : "only if the server requires it (nats://)"))
        }
        lines.append("ProbeDelays=\(backend.probeSchedule.delays.map(TimeSpan.format).joined(separator: " "))")
        lines.append("MaxRate=" + (backend.maxRate.map { "\(RequestRate.format($0))/s" } ?? "none"))
        lines += [
            "[Delivery]",
            "RetryDelays=\(delivery.retrySchedule.delays.map(TimeSpan.format).joined(separator: " "))",
            "MaxConcurrentDeliveries=\(delivery.maxConcurrentDeliveries)",
            "[Match]",
            configuration.match.summary,
        ]
        return lines
    }

    private static func verificationLines(_ settings: VerificationSettings, policy: SignedDataPolicy?) -> [String] {
        var lines = ["[Verification]", "Mode=\(settings.mode.rawValue)"]
        if let bundleID = settings.bundleID { lines.append("BundleID=\(bundleID)") }
        if let appAppleID = settings.appAppleID { lines.append("AppAppleID=\(appAppleID)") }
        if !settings.environments.isEmpty {
            lines.append("Environment=\(settings.environments.map(\.rawValue).joined(separator: " "))")
        }
        if let policy, policy.checksSignatures {
            lines.append("RootCertificateFile=\(settings.rootCertificateFile)")
            for root in policy.roots {
                lines.append("Root: \(root.subject) SHA-256 \(root.sha256Fingerprint)")
            }
            lines.append("ReceiptRootCertificateFile=\(settings.receiptRootCertificateFile)"
                         + (policy.receiptRootsMissing == nil ? "" : " (not installed)"))
            for root in policy.receiptRoots {
                lines.append("ReceiptRoot: \(root.subject) SHA-256 \(root.sha256Fingerprint)")
            }
        }
        lines.append("AcceptEnvelopes=\(settings.acceptEnvelopes ? "yes" : "no")")
        return lines
    }

    /// Each app, with what its sweep does differently from the main file's.
    private static func appLines(_ configuration: Configuration) -> [String] {
        configuration.apps.flatMap { app -> [String] in
            var line = "App \(app.name) (\(app.path)): BundleID=\(app.bundleID)"
            if let appleID = app.verification.appAppleID { line += " AppAppleID=\(appleID)" }
            if !app.verification.environments.isEmpty {
                line += " Environment=" + app.verification.environments.map(\.rawValue).joined(separator: " ")
            }
            var sweep = app.sweep
            sweep.bundleID = configuration.sweep.bundleID
            guard app.name != App.mainName, sweep != configuration.sweep else { return [line] }
            return [line] + sweepLines(app.sweep).dropFirst().map { "  [Sweep] " + $0 }
        }
    }

    private static func sweepLines(_ sweep: SweepSettings) -> [String] {
        [
            "[Sweep]",
            "Environment=\(sweep.environment.rawValue)",
            "BundleID=\(sweep.bundleID ?? "(not set)")",
            "IssuerID=\(sweep.issuerID ?? "(not set)")",
            "KeyID=\(sweep.keyID ?? "(not set)")",
            "PrivateKey: from \(sweep.privateKeyFile ?? "credential appstore-key")",
            "BaseURL=\(sweep.effectiveBaseURL)",
            "Window=\(TimeSpan.format(sweep.window))",
            "Overlap=\(TimeSpan.format(sweep.overlap))",
            "MaxRequestsPerSecond=\(sweep.maxRequestsPerSecond)",
        ]
    }
}
