// CommandThread: where a `txrecon` command's async code runs. Top-level code
// runs on the main actor, and every nonisolated async function it calls
// would run on Swift's global concurrent executor; the command is given a
// ThreadExecutor of its own as the preferred task executor instead, so the
// daemon's control flow (start-up, signals, reloads) stays off that
// executor (see ThreadExecutor for why).
// Reports: a thread that cannot be started, on stderr, as exit status 1.
import Glibc

public enum CommandThread {
    /// Runs `command` with a thread named "txrecon-main" as its preferred
    /// task executor; returns its exit status.
    public nonisolated(nonsending) static func run(_ command: () async -> Int32) async -> Int32 {
        let executor: ThreadExecutor
        do {
            executor = try ThreadExecutor(name: "txrecon-main")
        } catch {
            let message = Array("txrecon: \(error)\n".utf8)
            _ = message.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            return Daemon.ExitStatus.failure
        }
        defer { executor.shutdown() }
        return await withTaskExecutorPreference(executor) { await command() }
    }
}
