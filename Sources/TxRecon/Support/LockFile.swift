// LockFile: a lock one process holds for its whole life (the daemon's
// txrecon.lock, the receiver's receive/lock): an exclusive flock(2), which
// the kernel drops when the process dies, even by SIGKILL.
//
// The file is readable by its owner alone (mode 0600, set again on an older
// file): whoever can open it can take a shared flock and hold it, and the
// next start would find the lock taken. Asking whether it is held takes no
// lock either: /proc/locks lists every flock with its file's device and
// inode, so `txrecon status` run at the moment of a start never makes that
// start fail, and members of group txrecon, who cannot open the file, can
// still ask. Reports nothing.
import Glibc

enum LockFile {
    /// Opens (creating it) and locks the file at `path`; the descriptor to
    /// keep open. Throws with EWOULDBLOCK when another process holds it.
    static func acquire(_ path: String) throws(SpoolError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SpoolError("open", path) }
        guard fchmod(fd, 0o600) == 0 else {
            let error = SpoolError("chmod", path)
            close(fd)
            throw error
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = SpoolError("flock", path)
            close(fd)
            throw error
        }
        return fd
    }

    /// Whether a process holds the lock of the file at `path` now (false
    /// when there is no such file).
    static func isHeld(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        guard let locks = try? SystemCall.readFile("/proc/locks", limit: 16 << 20) else {
            return isHeldByAsking(path)
        }
        let device = UInt64(info.st_dev)
        let major = ((device >> 8) & 0xFFF) | ((device >> 32) & ~0xFFF)
        let minor = (device & 0xFF) | ((device >> 12) & ~0xFF)
        // "1: FLOCK  ADVISORY  WRITE 8281 fe:00:16237534 0 EOF"; a lock
        // waiting for another is listed with "->" and holds nothing.
        let file = hex2(major) + ":" + hex2(minor) + ":" + String(info.st_ino)
        for line in locks.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count >= 6, fields[1].elementsEqual("FLOCK".utf8), fields[3].elementsEqual("WRITE".utf8),
                  fields[5].elementsEqual(file.utf8) else { continue }
            return true
        }
        return false
    }

    /// Two hex digits at least, as /proc/locks prints a device number.
    private static func hex2(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return digits.count < 2 ? "0" + digits : digits
    }

    /// Without /proc: a shared lock taken and dropped at once (which a
    /// start at that instant would find taken).
    private static func isHeldByAsking(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }
}
