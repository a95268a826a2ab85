// txrecon check-config: validate the configuration and secrets, print what is in force.
import TxRecon

enum CheckConfigCommand: Command {
    static let summary = "check the configuration and print the settings in force"
    static let help = """
        Usage: txrecon check-config [--config PATH]

        Reads the configuration file and its drop-ins, the destination files in
        destinations/ and the app files in apps/ beside it, and the secret and root certificate files they
        name (the sweep's key when PrivateKeyFile= names it), exactly as the
        daemon, txrecon receive and txrecon sweep do; prints the settings
        in force (never a secret), each trusted root's subject and SHA-256 fingerprint,
        and the warnings the daemon (or txrecon sweep) would log at start: values
        that are legal but almost certainly wrong.
        Exit status 0 when valid, 78 with the file, line and key when not.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else { Usage.fail("check-config: unexpected argument '\(arguments.positional[0])'") }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        do {
            let secrets = try BackendSecrets.load(for: configuration, environment: ProcessEnvironment.current)
            let verification = try SignedDataPolicy.load(for: configuration)
            _ = try Receiver.uploadToken(for: configuration)
            // Each app's sweep, as txrecon sweep runs it (AppRuns); the main
            // file's alone when there is no app.
            if configuration.apps.isEmpty { try SweepCredentials.checkKeyFile(of: configuration) }
            for app in configuration.apps { try SweepCredentials.checkKeyFile(of: configuration.settings(for: app)) }
            var destinationSecrets: [BackendSecrets] = []
            for destination in configuration.destinations {
                destinationSecrets.append(try BackendSecrets.load(for: destination, environment: ProcessEnvironment.current))
            }
            printLine("\(configuration.path): valid")
            for line in ConfigurationSummary.lines(configuration, secrets: secrets, verification: verification,
                                                   destinationSecrets: destinationSecrets) {
                printLine("  " + line)
            }
            printLine("  ledger: " + Self.ledger(configuration.spool.ledgerFile))
            var warnings = ConfigurationWarnings.daemon(configuration, secrets: secrets)
                + ConfigurationWarnings.sweep(configuration.sweep)
                + configuration.apps.filter { $0.name != App.mainName }.flatMap { app in
                    ConfigurationWarnings.sweep(app.sweep).map { "\(app.path): " + $0 }
                }
            for (destination, secrets) in zip(configuration.destinations, destinationSecrets) {
                warnings += ConfigurationWarnings.destination(destination, secrets: secrets)
            }
            for warning in warnings + [verification?.receiptRootsMissing].compactMap({ $0 }) {
                printError("txrecon: warning: \(warning)")
            }
            return 0
        } catch {
            printError("txrecon: configuration error: \(error)")
            return ConfigurationError.exitStatus
        }
    }

    /// The ledger's size and rows, or why they cannot be told here (the
    /// ledger is readable by root and the txrecon user only, and a new
    /// installation has none until the daemon's first start).
    private static func ledger(_ path: String) -> String {
        do {
            let statistics = try SQLiteLedger(path: path, access: .readOnly).statistics()
            return "\(statistics.rows) rows, \(statistics.bytes) bytes"
        } catch {
            return "not read: \(error)" + Format.ledgerHint(error)
        }
    }
}
