// txrecon: the command line. Argument handling only; behaviour lives in TxRecon.
//
//   txrecon run | submit | status | list | show | history | release | retry |
//           requeue-rejected | replay | check-config | sweep | reconcile | import | lookup | receive |
//           probe
//           [--config PATH]
//
// Exit status: 0 success, 1 failure, 2 bad arguments (usage), 75 temporary
// failure (sweep, reconcile), 77 not permitted (replay as another user than root),
// 78 configuration error.
import Glibc
import TxRecon

let commands: [String: any Command.Type] = [
    "run": RunCommand.self, "submit": SubmitCommand.self, "status": StatusCommand.self,
    "list": ListCommand.self, "show": ShowCommand.self, "release": ReleaseCommand.self,
    "retry": RetryCommand.self, "requeue-rejected": RequeueRejectedCommand.self,
    "check-config": CheckConfigCommand.self, "sweep": SweepCommand.self, "reconcile": ReconcileCommand.self,
    "lookup": LookupCommand.self, "import": ImportCommand.self, "answer": AnswerCommand.self,
    "receive": ReceiveCommand.self,
    "probe": ProbeCommand.self, "replay": ReplayCommand.self, "history": HistoryCommand.self,
]

// First of all: whether OpenSSL frees itself at exit is decided by its
// first initialization (see CryptoLibrary).
CryptoLibrary.initializeWithoutExitCleanup()
var words = Array(CommandLine.arguments.dropFirst())
// Before any other thread exists, so that every thread inherits the mask
// and the daemon's signal thread receives each signal (DaemonSignals).
if words.first == "run" || words.first == "receive" { DaemonSignals.block() }
guard let name = words.first else {
    // No command is a usage error like any other, so a script that lost its
    // argument fails; the overview says what to type.
    printText(Usage.overview(commands: commands), toStandardError: true)
    exit(2)
}
if name == "--help" || name == "-h" || name == "help" {
    printText(Usage.overview(commands: commands))
    exit(0)
}
if name == "--version" {
    printLine("txrecon \(TxReconVersion.current)")
    exit(0)
}
guard let command = commands[name] else {
    if let meant = NearestName.suggestion(for: name, among: Array(commands.keys) + ["help"]) {
        Usage.fail("unknown command '\(name)'; did you mean '\(meant)'? see 'txrecon --help'")
    }
    Usage.fail("unknown command '\(name)'; see 'txrecon --help'")
}
words.removeFirst()
let arguments: Arguments
do {
    arguments = try Arguments(words, flags: command.flags, options: ["--config"] + command.options)
} catch {
    Usage.fail("\(name): \(error); see 'txrecon \(name) --help'")
}
if arguments.has("--help") {
    printText(command.help)
    exit(0)
}
exit(CommandThread.run { await command.run(arguments) })
