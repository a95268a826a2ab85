// txrecon probe: ask Apple for a test notification and follow it through
// the receiver and the daemon to the backend.
import TxRecon

enum ProbeCommand: Command {
    static let options = ["--app", "--timeout"]
    static let summary = "follow a test notification from Apple to the backend"
    static let help = """
        Usage: txrecon probe [--config PATH] [--app NAME] [--timeout SECONDS]

        Asks Apple (App Store Server API, with [Sweep]'s key and settings) to send a
        TEST notification to the notification URL of [Sweep] Environment=, then
        follows it: Apple's attempt to send it (and the receiver's answer), the
        daemon taking it into queue/, the backend confirming it (done/). Prints each
        hop with its time, or the hop where it stopped and why. Needs the In-App
        Purchase key, so run it as root (or with the sweep's credential), and
        DoneRetention= above zero.

        --app NAME          probe this app only; by default every app in turn.
        --timeout SECONDS   how long to follow it (default 120)

        Exit status 0 only when the backend confirmed the notification; 1 when it
        stopped at a hop or the time ran out; 78 for a configuration problem.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else { Usage.fail("probe: unexpected argument '\(arguments.positional[0])'") }
        var timeout = ProbeRun.defaultTimeout
        if let text = arguments.value("--timeout") {
            guard let seconds = Int(text), seconds > 0, seconds <= 86_400 else {
                Usage.fail("probe: --timeout takes a number of seconds from 1 to 86400, not '\(text)'")
            }
            timeout = .seconds(seconds)
        }
        return await ProbeRun.run(configurationPath: arguments.configurationPath, app: arguments.value("--app"),
                                  environment: ProcessEnvironment.current, timeout: timeout) { printLine($0) }
    }
}
