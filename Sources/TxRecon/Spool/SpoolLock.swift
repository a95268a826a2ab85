// SpoolLock: one daemon per spool. The daemon holds an exclusive flock(2) on
// txrecon.lock for its whole life (the kernel drops it when the process dies,
// even by SIGKILL), which keeps the single-writer rule even if an operator
// starts a second instance by hand. The CLI asks the same lock whether a
// daemon is running.
import Glibc

/// The held lock; keep it alive as long as the daemon runs.
public final class SpoolLock: Sendable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    /// Takes the lock or explains who holds it.
    public static func acquire(_ layout: SpoolLayout) throws(SpoolError) -> SpoolLock {
        let fd = open(layout.lockFile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o640)
        guard fd >= 0 else { throw SpoolError("open", layout.lockFile) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            throw SpoolError("another txrecon holds the lock", layout.lockFile, code)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return SpoolLock(fd: fd)
    }

    /// Whether a daemon holds the spool's lock now (false when there is no lock file).
    public static func isHeld(_ layout: SpoolLayout) -> Bool {
        let fd = open(layout.lockFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }
}
