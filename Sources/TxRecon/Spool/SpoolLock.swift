// SpoolLock: one daemon per spool. The daemon holds txrecon.lock (a
// LockFile) for its whole life, which keeps the single-writer rule even if
// an operator starts a second instance by hand. The CLI asks the same lock
// whether a daemon is running.
import Glibc

/// The held lock; keep it alive as long as the daemon runs.
package final class SpoolLock: Sendable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { LockFile.release(fd) }

    /// Takes the lock or explains who holds it.
    package static func acquire(_ layout: SpoolLayout) throws(SpoolError) -> SpoolLock {
        let fd: Int32
        do {
            fd = try LockFile.acquire(layout.lockFile)
        } catch where error.code == EWOULDBLOCK {
            throw SpoolError("another txrecon holds the lock", layout.lockFile, error.code)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return SpoolLock(fd: fd)
    }

    /// Whether a daemon holds the spool's lock now (false when there is no lock file).
    package static func isHeld(_ layout: SpoolLayout) -> Bool { LockFile.isHeld(layout.lockFile) }
}
