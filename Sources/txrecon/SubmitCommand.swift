// txrecon submit: drop files into the spool the safe way (tmp/, fsync, rename).
import Glibc
import TxRecon

enum SubmitCommand: Command {
    static let summary = "drop files (or standard input) into the spool"
    static let help = """
        Usage: txrecon submit [--config PATH] FILE... | -

        Copies each FILE (or standard input with '-') into the spool: written to tmp/,
        flushed to disk, then renamed into new/, so the daemon only ever sees complete
        files. Prints the name each drop got in new/. The daemon checks the content;
        this command does not.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard !arguments.positional.isEmpty else { Usage.fail("submit: name at least one FILE, or - for standard input") }
        guard let configuration = loadConfiguration(arguments) else { return ConfigurationError.exitStatus }
        let submission = Submission(layout: SpoolLayout(root: configuration.spool.directory))
        var status: Int32 = 0
        for path in arguments.positional {
            do {
                let bytes = try FileInput.read(path, limit: configuration.spool.maxFileSize)
                let name = try submission.drop(bytes)
                printLine("\(path): new/\(name)")
            } catch {
                printError("txrecon: submit \(path): \(error)")
                status = 1
            }
        }
        return status
    }
}
