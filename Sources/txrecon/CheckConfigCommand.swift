// txrecon check-config: validate the configuration and secrets, print what is in force.
import TxRecon

enum CheckConfigCommand: Command {
    static let summary = "check the configuration and print the settings in force"
    static let help = """
        Usage: txrecon check-config [--config PATH]

        Reads the configuration file and its drop-ins, and the secret files they name,
        exactly as the daemon does; prints the settings in force (never a secret).
        Exit status 0 when valid, 78 with the file, line and key when not.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else { Usage.fail("check-config: unexpected argument '\(arguments.positional[0])'") }
        let configuration: Configuration
        switch loadConfiguration(arguments) {
        case let .success(loaded): configuration = loaded
        case let .failure(code): return code.status
        }
        do {
            let secrets = try BackendSecrets.load(for: configuration, environment: ProcessEnvironment.current)
            print("\(configuration.path): valid")
            for line in ConfigurationSummary.lines(configuration, secrets: secrets) { print("  " + line) }
            return 0
        } catch {
            printError("txrecon: configuration error: \(error)")
            return ConfigurationError.exitStatus
        }
    }
}
