// LockFile: a lock one process holds for its whole life (the daemon's
// txrecon.lock, the receiver's receive/lock, the sweep's sweep/lock): an
// exclusive flock(2) and an open file description lock (fcntl F_OFD_SETLK)
// on the whole file, both dropped by the kernel when the process dies, even
// by SIGKILL. The flock is the one older releases take and ask about; the
// other can be asked about without taking anything.
//
// The file is readable by its owner alone (mode 0600, set again on an older
// file): whoever can open it can take a shared lock and hold it, and the
// next start would find the lock taken. Asking takes no lock either, so
// `txrecon status` run at the moment of a start never makes that start
// fail: whoever can open the file asks F_OFD_GETLK; a member of group
// txrecon, who cannot, reads /proc/locks, which lists every lock with its
// file's inode (by inode alone: on btrfs and some overlays the device it
// prints is not the one stat(2) gives). Reports nothing.
import Glibc

enum LockFile {
    /// fcntl(2) commands Glibc's module does not export (Linux 3.15).
    private static let getOFDLock: Int32 = 36
    private static let setOFDLock: Int32 = 37

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
        var lock = wholeFile(F_WRLCK)
        if fcntl(fd, setOFDLock, &lock) != 0, errno != EINVAL {
            let code = errno == EAGAIN || errno == EACCES ? EWOULDBLOCK : errno
            close(fd)
            throw SpoolError("fcntl", path, code)
        }
        return fd
    }

    /// Drops both locks of `fd` (from `acquire`), then closes it. Closing
    /// alone would leave them held while any copy of the descriptor lives:
    /// both locks belong to the open file description, and a child being
    /// spawned holds a copy until its exec closes it, so the next `acquire`
    /// in this process could find its own released lock still taken.
    static func release(_ fd: Int32) {
        var lock = wholeFile(F_UNLCK)
        _ = fcntl(fd, setOFDLock, &lock)
        _ = flock(fd, LOCK_UN)
        close(fd)
    }

    /// Whether a process holds the lock of the file at `path` now (false
    /// when there is no such file).
    static func isHeld(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd >= 0 {
            defer { close(fd) }
            var lock = wholeFile(F_WRLCK)
            if fcntl(fd, getOFDLock, &lock) == 0 { return lock.l_type != Int16(F_UNLCK) }
        } else if errno == ENOENT {
            return false
        }
        return isListedInProcLocks(path)
    }

    /// Whether /proc/locks lists a write lock held on the file's inode.
    /// internal for testing
    static func isListedInProcLocks(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0,
              let locks = try? SystemCall.readFile("/proc/locks", limit: 16 << 20) else { return false }
        // "1: FLOCK  ADVISORY  WRITE 8281 fe:00:16237534 0 EOF"; a lock
        // waiting for another is listed with "->" and holds nothing.
        let inode = ":" + String(info.st_ino)
        for line in locks.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count >= 6, fields[1].elementsEqual("FLOCK".utf8) || fields[1].elementsEqual("OFDLCK".utf8),
                  fields[3].elementsEqual("WRITE".utf8), fields[5].reversed().starts(with: inode.utf8.reversed())
            else { continue }
            return true
        }
        return false
    }

    private static func wholeFile(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        return lock
    }
}
