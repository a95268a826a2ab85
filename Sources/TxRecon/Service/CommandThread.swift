// CommandThread: where a `txrecon` command's async code runs. The command is
// given a ThreadExecutor of its own as the preferred task executor, so the
// daemon's control flow (start-up, signals, reloads) stays off Swift's
// global executor (see ThreadExecutor for why), while main's own thread
// waits for it. main stays synchronous on purpose: with a top-level await,
// main's code runs as a task on another thread while the main thread
// parks, and what main must do on the main thread before any other starts
// (block the daemon's signals, see DaemonSignals) would miss it.
// Reports: a thread that cannot be started, on stderr, as exit status 1.
import Glibc

package enum CommandThread {
    /// Runs `command` with a thread named "txrecon-main" as its preferred
    /// task executor, blocking the calling thread until it returns its exit
    /// status.
    package static func run(_ command: @escaping @Sendable () async -> Int32) -> Int32 {
        let executor: ThreadExecutor
        do {
            executor = try ThreadExecutor(name: "txrecon-main")
        } catch {
            let message = Array("txrecon: \(error)\n".utf8)
            _ = message.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            return Daemon.ExitStatus.failure
        }
        defer { executor.shutdown() }
        return executor.runBlocking { await $loop.withValue(executor) { await command() } }
    }

    /// The running command's own thread, an event loop (ThreadExecutor):
    /// set for the command's task by `run`, nil outside one. The daemon and
    /// the receiver watch their signals there (DaemonSignals).
    @TaskLocal package static var loop: ThreadExecutor?
}
