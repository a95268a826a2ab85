// txrecon run: the daemon in the foreground (what the systemd unit starts).
import TxRecon

enum RunCommand: Command {
    static let summary = "run the daemon in the foreground (systemd starts this)"
    static let help = """
        Usage: txrecon run [--config PATH]

        Runs the delivery daemon in the foreground until SIGTERM or SIGINT. SIGHUP
        reloads the configuration. Logs go to the journal when stderr is the journal,
        else one line per event to stderr. Exit status 78 on a configuration error.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else { Usage.fail("run: unexpected argument '\(arguments.positional[0])'") }
        return await Daemon.run(configurationPath: arguments.configurationPath,
                                environment: ProcessEnvironment.current, version: TxReconVersion.current)
    }
}
