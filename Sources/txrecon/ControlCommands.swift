// txrecon release | retry | requeue-rejected | replay: operator requests the daemon
// executes through ctl/ (only the daemon moves items).
import Glibc
import TxRecon

enum ReleaseCommand: Command {
    static let flags = ["--all"]
    static let options = ["--destination"]
    static let summary = "move held items back to the queue, due now"
    static let help = """
        Usage: txrecon release [--config PATH] [--destination NAME] KEY... | --all

        Moves held items from hold/ back to queue/, due at once, with a fresh
        backoff. Do this after the backend (or the item) is fixed: see
        'txrecon list hold' and 'txrecon show KEY' for why each was held. With
        further destinations (destinations/), the items are released at every
        destination that holds them, or only at NAME with --destination
        (`backend` is [Backend]).
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        await ControlCommand.run(.release, arguments)
    }
}

enum RetryCommand: Command {
    static let flags = ["--all"]
    static let options = ["--destination"]
    static let summary = "make queued items due now"
    static let help = """
        Usage: txrecon retry [--config PATH] [--destination NAME] KEY... | --all

        Makes queued items due at once instead of at their scheduled retry, for
        example after the backend came back. Their attempt count is kept. With
        further destinations (destinations/), at every destination that queues
        them, or only at NAME with --destination (`backend` is [Backend]).
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        await ControlCommand.run(.retry, arguments)
    }
}

enum RequeueRejectedCommand: Command {
    static let flags = ["--all"]
    static let summary = "read rejected inputs again (after a fix)"
    static let help = """
        Usage: txrecon requeue-rejected [--config PATH] NAME... | --all

        Moves rejected inputs from rejected/ back into new/ so the daemon reads them
        again, for example after a configuration fix. NAME is the file's name in
        rejected/ (see 'txrecon list rejected').
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        await ControlCommand.run(.requeueRejected, arguments)
    }
}

enum ControlCommand {
    static func run(_ command: ControlRequest.Command, _ arguments: Arguments) async -> Int32 {
        let all = arguments.has("--all")
        guard all != !arguments.positional.isEmpty else {
            Usage.fail("\(command.rawValue): name the items, or --all (not both)")
        }
        let (targets, refused) = validTargets(arguments.positional, for: command)
        guard all || !targets.isEmpty else { return 1 }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let destination = arguments.value("--destination")
        if let destination { checkDestination(destination, configuration, command: command) }
        return submit(ControlRequest(command, targets: targets, all: all, destination: destination), configuration,
                      alreadyFailed: refused)
    }

    /// Exits with a usage error naming the destinations when `name` is not
    /// one. The daemon checks it again against the destinations it runs.
    static func checkDestination(_ name: String, _ configuration: Configuration, command: ControlRequest.Command) {
        _ = destinationLayouts(configuration, only: name, command: command.rawValue)
    }

    /// The names `command` may act on, each refused one reported; `refused`
    /// tells whether there was one. The daemon checks every name again
    /// (anyone in group txrecon can write ctl/); checked here too, so that
    /// nothing it would refuse is sent.
    static func validTargets(_ names: [String], for command: ControlRequest.Command) -> (targets: [String], refused: Bool) {
        let invalid = names.filter { !ControlRequest.isValid($0, for: command) }
        for target in invalid { printError("\(target): skipped: \(ControlRequest.invalidTargetReason)") }
        return (names.filter { ControlRequest.isValid($0, for: command) }, !invalid.isEmpty)
    }

    /// Hands `request` to the daemon through ctl/ and prints its answer,
    /// waiting up to `timeout` for it. `alreadyFailed`: some target was
    /// refused before the request was written (exit status 1 then).
    static func submit(_ request: ControlRequest, _ configuration: Configuration, alreadyFailed: Bool,
                       timeout: Duration = .seconds(10)) -> Int32 {
        let command = request.command
        let layout = SpoolLayout(root: configuration.spool.directory)
        let client = ControlClient(layout: layout)
        do {
            let name = try client.submit(request)
            guard SpoolLock.isHeld(layout) else {
                printLine("the daemon is not running: the request waits in ctl/\(name) and takes effect when it starts")
                return alreadyFailed ? 1 : 0
            }
            guard let result = client.result(of: name, timeout: timeout) else {
                printError("txrecon: \(command.rawValue): no answer from the daemon within "
                           + "\(TimeSpan.format(timeout)); the request stays in ctl/\(name) unless it ran already "
                           + "(its answer may not have been writable): see `journalctl -u txrecon` before asking again")
                return 1
            }
            for target in result.applied { printLine("\(target): \(Format.verb(command))") }
            for (target, reason) in result.skipped { printError("\(target): skipped: \(reason)") }
            // --all (or a replay's window) that found nothing: said, not
            // left as an empty answer that looks like success at something.
            if result.applied.isEmpty && result.skipped.isEmpty { printLine(Format.nothingSelected(request)) }
            return result.skipped.isEmpty && !alreadyFailed ? 0 : 1
        } catch {
            printError("txrecon: \(command.rawValue): \(error)")
            return 1
        }
    }
}

enum ReplayCommand: Command {
    static let flags = ["--all"]
    static let options = ["--since", "--until", "--destination"]
    static let summary = "deliver delivered items again, from done/ (root only)"
    static let help = """
        Usage: txrecon replay [--config PATH] [--since TIME] [--until TIME] [--destination NAME] KEY... | --all

        Delivers items again that were delivered already and are still in done/
        (as far back as DoneRetention=, 3 days by default), for a backend that lost
        what it had applied. Each goes out with the same Idempotency-Key as the
        first time. Without KEYs, --all or a --since/--until window replays every
        delivered item in done/ received in that window. TIME is an RFC 3339 time
        ("2026-12-01T09:30:00Z") or a span ago ("2h"); a window whose --since is not
        before its --until is a usage error. An item still queued or held is left
        alone; a selection that finds nothing says so. With further destinations (destinations/), every destination's
        done/ is replayed to it, or only NAME's with --destination (`backend` is
        [Backend]). Only root may ask for a replay: it can send a great deal.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard getuid() == 0 else {
            printError("txrecon: replay: only root may ask for a replay (it can send a great deal); run it as root")
            return 77
        }
        var window: [String: Int64] = [:]
        for option in ["--since", "--until"] {
            guard let text = arguments.value(option) else { continue }
            guard let time = OperatorTime.parse(text) else {
                Usage.fail("replay: \(option) \"\(text)\" is not \(OperatorTime.acceptedForms)")
            }
            window[option] = time
        }
        if let since = window["--since"], let until = window["--until"], since >= until {
            // [since, until) holds no time: nothing could ever be selected.
            Usage.fail("replay: --since \(arguments.value("--since")!) (\(WallTime.rfc3339(since))) is not before "
                       + "--until \(arguments.value("--until")!) (\(WallTime.rfc3339(until))): the window holds no time "
                       + "and would replay nothing; give --since the earlier time")
        }
        let keys = arguments.positional
        let all = arguments.has("--all") || (keys.isEmpty && !window.isEmpty)
        guard all != !keys.isEmpty else {
            Usage.fail("replay: name the items, or --all, or a --since/--until window (not items and --all)")
        }
        let (targets, refused) = ControlCommand.validTargets(keys, for: .replay)
        guard all || !targets.isEmpty else { return 1 }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let destination = arguments.value("--destination")
        if let destination { ControlCommand.checkDestination(destination, configuration, command: .replay) }
        let request = ControlRequest(.replay, targets: targets, all: all, since: window["--since"],
                                     until: window["--until"], destination: destination)
        // A replay copies each item back into queue/: many take a while.
        return ControlCommand.submit(request, configuration, alreadyFailed: refused, timeout: .seconds(600))
    }
}
