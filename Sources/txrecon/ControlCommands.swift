// txrecon release | retry | requeue-rejected: operator requests the daemon
// executes through ctl/ (only the daemon moves items).
import TxRecon

enum ReleaseCommand: Command {
    static let flags = ["--all"]
    static let summary = "move held items back to the queue, due now"
    static let help = """
        Usage: txrecon release [--config PATH] KEY... | --all

        Moves held items from hold/ back to queue/, due at once, with a fresh
        backoff. Do this after the backend (or the item) is fixed: see
        'txrecon list hold' and 'txrecon show KEY' for why each was held.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        await ControlCommand.run(.release, arguments)
    }
}

enum RetryCommand: Command {
    static let flags = ["--all"]
    static let summary = "make queued items due now"
    static let help = """
        Usage: txrecon retry [--config PATH] KEY... | --all

        Makes queued items due at once instead of at their scheduled retry, for
        example after the backend came back. Their attempt count is kept.
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
        // The daemon checks every name again (anyone in group txrecon can
        // write ctl/); checked here too, so that nothing it would refuse is sent.
        let invalid = arguments.positional.filter { !ControlRequest.isValid($0, for: command) }
        for target in invalid { printError("\(target): skipped: \(ControlRequest.invalidTargetReason)") }
        let targets = arguments.positional.filter { ControlRequest.isValid($0, for: command) }
        guard all || !targets.isEmpty else { return 1 }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let layout = SpoolLayout(root: configuration.spool.directory)
        let client = ControlClient(layout: layout)
        do {
            let name = try client.submit(ControlRequest(command, targets: targets, all: all))
            guard SpoolLock.isHeld(layout) else {
                printLine("the daemon is not running: the request waits in ctl/\(name) and takes effect when it starts")
                return invalid.isEmpty ? 0 : 1
            }
            guard let result = client.result(of: name, timeout: .seconds(10)) else {
                printError("txrecon: \(command.rawValue): no answer from the daemon within 10s; the request stays in ctl/\(name)")
                return 1
            }
            for target in result.applied { printLine("\(target): \(Format.verb(command))") }
            for (target, reason) in result.skipped { printError("\(target): skipped: \(reason)") }
            return result.skipped.isEmpty && invalid.isEmpty ? 0 : 1
        } catch {
            printError("txrecon: \(command.rawValue): \(error)")
            return 1
        }
    }
}
