// ConfigurationKey: the table of every key txrecon.conf accepts, one entry
// per `Section.Key`, each naming the `Configuration` field it sets and the
// parser that checks its value.
//
// Adding a key is adding one entry to `all` (and a field with its default to
// Configuration.swift); sections are the ones the entries name. Defaults live
// only in Configuration.swift: an empty assignment (`Key=`) copies the field
// back from a fresh `Configuration`. Parsers throw `InvalidValue`; the loader
// turns that into a `ConfigurationError` naming the file and line.

/// One key of the configuration file.
struct ConfigurationKey: Sendable {
    /// `Spool`, `Backend`, … as in the `[Section]` header.
    let section: String
    /// As written before `=`; case-sensitive.
    let name: String
    /// Parses `value` and stores it in the field.
    let assign: @Sendable (_ value: String, _ configuration: inout Configuration) throws(InvalidValue) -> Void
    /// Puts the field's default back.
    let reset: @Sendable (_ configuration: inout Configuration) -> Void
    /// Whether a reload leaves the running value in force until a restart:
    /// what the program made at start from it (the spool's directory, the
    /// ledger's writer, the transport's connections, the listening socket) stays.
    /// The manual says "Takes effect only at a restart" of exactly these
    /// (ManualPageTests).
    let restartOnly: Bool
    /// Copies the field of `running` into `next` when they differ; returns
    /// whether they did.
    let keepRunning: @Sendable (_ running: Configuration, _ next: inout Configuration) -> Bool

    /// `Section.Key`, as errors and `Configuration.origins` name it.
    var qualifiedName: String { "\(section).\(name)" }

    init<Value: Equatable & Sendable>(
        _ section: String, _ name: String,
        _ field: WritableKeyPath<Configuration, Value> & Sendable,
        _ parse: @escaping SettingValue.Parser<Value>,
        restartOnly: Bool = false
    ) {
        self.section = section
        self.name = name
        self.restartOnly = restartOnly
        assign = { value, configuration throws(InvalidValue) in
            configuration[keyPath: field] = try parse(value)
        }
        reset = { configuration in
            configuration[keyPath: field] = Configuration(path: configuration.path)[keyPath: field]
        }
        keepRunning = { running, next in
            guard next[keyPath: field] != running[keyPath: field] else { return false }
            next[keyPath: field] = running[keyPath: field]
            return true
        }
    }

    /// What a reload does with the keys that take effect only at a restart:
    /// of those `reads` picks (the ones a program uses), each whose new value
    /// differs keeps its running value in `next`; returns their names
    /// (`Directory=`), for the log line that says they wait for a restart.
    static func keepRunningValues(of running: Configuration, in next: inout Configuration,
                                  reads: (ConfigurationKey) -> Bool) -> [String] {
        all.filter { $0.restartOnly && reads($0) }.compactMap { key in
            key.keepRunning(running, &next) ? key.name + "=" : nil
        }
    }
}

extension ConfigurationKey {
    /// Every key, grouped by section in the order the sample file shows them.
    static let all: [ConfigurationKey] = [
        ConfigurationKey("Spool", "Directory", \.spool.directory, SettingValue.absolutePath, restartOnly: true),
        ConfigurationKey("Spool", "MaxFileSize", \.spool.maxFileSize,
                         SettingValue.size(in: 1...(1 << 30), limits: "between 1 and 1G")),
        ConfigurationKey("Spool", "DoneRetention", \.spool.doneRetention, SettingValue.timeSpan, restartOnly: true),
        ConfigurationKey("Spool", "LedgerFile", \.spool.ledgerFile, SettingValue.absolutePath, restartOnly: true),
        ConfigurationKey("Spool", "LedgerRetention", \.spool.ledgerRetention, SettingValue.positiveTimeSpan, restartOnly: true),

        ConfigurationKey("Backend", "URL", \.backend.url, SettingValue.destinationURL),
        ConfigurationKey("Backend", "Timeout", \.backend.timeout, SettingValue.positiveTimeSpan),
        ConfigurationKey("Backend", "HTTPVersion", \.backend.httpVersion, SettingValue.httpVersion, restartOnly: true),
        ConfigurationKey("Backend", "BearerTokenFile", \.backend.bearerTokenFile, SettingValue.absolutePath),
        ConfigurationKey("Backend", "SigningSecretFile", \.backend.signingSecretFile, SettingValue.absolutePath),
        ConfigurationKey("Backend", "CAFile", \.backend.caFile, SettingValue.absolutePath),
        ConfigurationKey("Backend", "ClientCertificateFile", \.backend.clientCertificateFile, SettingValue.absolutePath),
        ConfigurationKey("Backend", "ClientKeyFile", \.backend.clientKeyFile, SettingValue.absolutePath),
        ConfigurationKey("Backend", "ProbeDelays", \.backend.probeSchedule, SettingValue.retrySchedule),
        ConfigurationKey("Backend", "MaxRate", \.backend.maxRate, SettingValue.requestRate),
        ConfigurationKey("Backend", "Subject", \.backend.subject, SettingValue.natsSubject),
        ConfigurationKey("Backend", "Stream", \.backend.stream, SettingValue.streamName),

        ConfigurationKey("Delivery", "RetryDelays", \.delivery.retrySchedule, SettingValue.retrySchedule),
        ConfigurationKey("Delivery", "MaxConcurrentDeliveries", \.delivery.maxConcurrentDeliveries,
                         SettingValue.integer(in: 1...64), restartOnly: true),

        ConfigurationKey("Match", "Environment", \.match.environments, SettingValue.matchEnvironments),
        ConfigurationKey("Match", "Kind", \.match.kinds, SettingValue.matchKinds),
        ConfigurationKey("Match", "NotificationType", \.match.notificationTypes, SettingValue.matchNotificationTypes),
        ConfigurationKey("Match", "App", \.match.apps, SettingValue.matchApps),

        ConfigurationKey("Verification", "Mode", \.verification.mode, SettingValue.verificationMode),
        ConfigurationKey("Verification", "ReceiptRootCertificateFile", \.verification.receiptRootCertificateFile,
                         SettingValue.absolutePath),
        ConfigurationKey("Verification", "RootCertificateFile", \.verification.rootCertificateFile,
                         SettingValue.absolutePath),
        ConfigurationKey("Verification", "BundleID", \.verification.bundleID, SettingValue.appStoreIdentifier),
        ConfigurationKey("Verification", "AppAppleID", \.verification.appAppleID, SettingValue.appAppleID),
        ConfigurationKey("Verification", "Environment", \.verification.environments, SettingValue.signedDataEnvironments),
        ConfigurationKey("Verification", "AcceptEnvelopes", \.verification.acceptEnvelopes, SettingValue.boolean),

        ConfigurationKey("Metrics", "TextfileDirectory", \.metrics.textfileDirectory, SettingValue.absolutePath, restartOnly: true),

        ConfigurationKey("Sweep", "Environment", \.sweep.environment, SettingValue.appStoreEnvironment),
        ConfigurationKey("Sweep", "BundleID", \.sweep.bundleID, SettingValue.appStoreIdentifier),
        ConfigurationKey("Sweep", "IssuerID", \.sweep.issuerID, SettingValue.appStoreIdentifier),
        ConfigurationKey("Sweep", "KeyID", \.sweep.keyID, SettingValue.appStoreIdentifier),
        ConfigurationKey("Sweep", "PrivateKeyFile", \.sweep.privateKeyFile, SettingValue.absolutePath),
        ConfigurationKey("Sweep", "BaseURL", \.sweep.baseURL, SettingValue.backendURL),
        ConfigurationKey("Sweep", "Window", \.sweep.window, SettingValue.sweepWindow),
        ConfigurationKey("Sweep", "Overlap", \.sweep.overlap, SettingValue.sweepOverlap),
        ConfigurationKey("Sweep", "MaxRequestsPerSecond", \.sweep.maxRequestsPerSecond,
                         SettingValue.integer(in: 1...50)),

        ConfigurationKey("Reconcile", "FullCycle", \.reconcile.fullCycle, SettingValue.reconcileCycle),

        ConfigurationKey("Outbox", "FinishTransactions", \.outbox.finishTransactions, SettingValue.boolean),
        ConfigurationKey("Outbox", "AnswersFrom", \.outbox.answersFrom, SettingValue.answeringDestination),
        ConfigurationKey("Outbox", "ConsumptionDeadlineWarning", \.outbox.consumptionDeadlineWarning,
                         SettingValue.consumptionDeadlineWarning),

        ConfigurationKey("Receive", "Listen", \.receive.listen, SettingValue.listenAddress, restartOnly: true),
        ConfigurationKey("Receive", "UploadTokenFile", \.receive.uploadTokenFile, SettingValue.absolutePath),
        ConfigurationKey("Receive", "MaxConnections", \.receive.maxConnections, SettingValue.integer(in: 1...65_536),
                         restartOnly: true),
        ConfigurationKey("Receive", "MaxConnectionsPerAddress", \.receive.maxConnectionsPerAddress,
                         SettingValue.integer(in: 1...65_536), restartOnly: true),
        ConfigurationKey("Receive", "IdleTimeout", \.receive.idleTimeout, SettingValue.positiveTimeSpan, restartOnly: true),
        ConfigurationKey("Receive", "RequestTimeout", \.receive.requestTimeout, SettingValue.positiveTimeSpan, restartOnly: true),
        ConfigurationKey("Receive", "MaxRequestsPerSecondPerAddress", \.receive.maxRequestsPerSecondPerAddress,
                         SettingValue.integer(in: 0...1_000_000)),
        ConfigurationKey("Receive", "MaxInboxFiles", \.receive.maxInboxFiles, SettingValue.integer(in: 1...100_000_000)),
        ConfigurationKey("Receive", "RejectedQuota", \.receive.rejectedQuota, SettingValue.integer(in: 0...100_000_000)),
    ]

    /// The section names, in table order.
    static let sections: [String] = all.reduce(into: []) { names, key in
        if !names.contains(key.section) { names.append(key.section) }
    }

    /// The entries by `Section.Key`.
    static let byQualifiedName: [String: ConfigurationKey] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.qualifiedName, $0) })
}
