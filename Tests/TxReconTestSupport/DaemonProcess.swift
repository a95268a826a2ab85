// DaemonProcess: the built `txrecon` binary run as a child process, for
// integration tests: real spool, real HTTP server, real notify socket.
// Standard error goes to a file the test can read; every process started is
// ended by PID (SIGTERM, then SIGKILL) when the value goes away.
import Glibc
import Synchronization
import TxRecon

package final class DaemonProcess: Sendable {
    package let pid: pid_t
    package let stderrPath: String
    private let exitStatus = Mutex<Int32?>(nil)

    /// The `txrecon` executable next to the test bundle in the build directory.
    package static var binary: String {
        if let path = getenv("TXRECON_BINARY") { return String(cString: path) }
        var directory = CommandLine.arguments[0]
        while !directory.isEmpty, !directory.hasSuffix("/") { directory.removeLast() }
        for candidate in [directory + "txrecon", directory + "../txrecon"] where access(candidate, X_OK) == 0 {
            return candidate
        }
        return directory + "txrecon"
    }

    /// Starts `txrecon ARGUMENTS` with `environment` added to this process's own.
    package convenience init(_ arguments: [String], environment: [String: String] = [:], stderrPath: String,
                            stdinPath: String? = nil) throws {
        try self.init(command: [DaemonProcess.binary] + arguments, environment: environment,
                      stderrPath: stderrPath, stdinPath: stdinPath)
    }

    /// Starts any `command` (its first element a path) the same way, for
    /// helper processes such as `openssl s_server`; stdout goes to
    /// `stderrPath + ".out"`.
    package init(command: [String], environment: [String: String] = [:], stderrPath: String,
                stdinPath: String? = nil) throws {
        self.stderrPath = stderrPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 1, stderrPath + ".out", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath ?? "/dev/null", O_RDONLY, 0)
        var merged = ProcessEnvironment.current
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "CREDENTIALS_DIRECTORY"] {
            merged[name] = nil
        }
        merged.merge(environment) { $1 }
        let argv = command.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // A clean signal state: the test runner may block or ignore signals
        // (SIGTERM, SIGPIPE) that the daemon must see as systemd would send them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child = pid_t()
        let result = DescriptorInheritance.exclusively {
            posix_spawn(&child, command[0], &actions, &attributes, argv, envp)
        }
        guard result == 0 else { throw SpawnError(code: result) }
        pid = child
    }

    package struct SpawnError: Error, CustomStringConvertible {
        package var code: Int32
        package var description: String { "posix_spawn: \(String(cString: strerror(code)))" }
    }

    deinit {
        if exitStatus.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    package func signal(_ number: Int32) { kill(pid, number) }

    /// `wait(timeout:)` blocking the calling thread: only for quick commands
    /// (mount, chown) in set-up and teardown code that cannot await.
    package func waitBlocking(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now >= deadline { return nil }
            usleep(2_000)
        }
        let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        exitStatus.withLock { $0 = code }
        return code
    }

    /// For teardown (deinit, defer), where nothing can be awaited: SIGTERM,
    /// up to `grace` for the process to exit, then SIGKILL. Blocks the
    /// calling thread, briefly: a daemon exits within milliseconds of SIGTERM.
    package func terminate(grace: Duration = .seconds(5)) {
        guard exitStatus.withLock({ $0 }) == nil else { return }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now >= deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(5_000)
        }
        exitStatus.withLock { $0 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F) }
    }

    /// Waits up to `timeout` for the process to exit; its exit status, or
    /// 128+N for a signal, or nil if it is still running. Suspends between
    /// checks: a test must never block one of the cooperative pool's two
    /// threads, or every other test stalls with it.
    package func wait(timeout: Duration) async -> Int32? {
        if let known = exitStatus.withLock({ $0 }) { return known }
        let deadline = ContinuousClock.now + timeout
        while true {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
                exitStatus.withLock { $0 = code }
                return code
            }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Runs `txrecon ARGUMENTS` to completion; returns its status and output.
    package static func run(_ arguments: [String], environment: [String: String] = [:],
                           in directory: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        let stderrPath = directory + "/cli-\(UInt32.random(in: 0...UInt32.max)).err"
        let process = try DaemonProcess(arguments, environment: environment, stderrPath: stderrPath)
        let status = await process.wait(timeout: .seconds(60)) ?? -1
        return (status, process.read(stderrPath + ".out"), process.read(stderrPath))
    }

    package var stderr: String { read(stderrPath) }

    /// What the process wrote to standard output so far.
    package var stdout: String { read(stderrPath + ".out") }

    private func read(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
