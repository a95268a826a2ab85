// RegularFile: reads a configuration file or a secret file whole, through
// one open file descriptor.
//
// Opens with O_NONBLOCK so that a FIFO or device put where a file belongs
// cannot hang start-up, refuses anything but a regular file (symbolic links
// are followed unless the caller says not to), and returns the bytes together with the mode of the very
// file it read, so permission checks and contents cannot disagree. Throws
// `RegularFile.Failure`; logs nothing. It blocks on disk I/O: call it from
// the main thread at start-up or a reload thread, never from async code.
import Glibc

/// Reading a small file in one go.
enum RegularFile {
    /// What was read.
    struct Contents {
        var bytes: [UInt8]
        /// `st_mode` of the file read: type and permission bits.
        var mode: mode_t
        /// `st_uid` of the file read: who created it (or root chowned it to).
        var owner: uid_t
        /// `st_nlink` of the file read: its number of names.
        var links: UInt = 1
    }

    /// Why a file could not be read. `description` completes a sentence
    /// whose subject is the file ("… cannot be opened: Permission denied").
    enum Failure: Error, Equatable, CustomStringConvertible {
        /// ENOENT: the file, or a directory on its path, does not exist.
        case missing
        /// Any other error from open(2) or read(2), as strerror(3) words it.
        case unreadable(reason: String)
        /// A directory, FIFO, socket or device; `kind` names it.
        case notRegularFile(kind: String)
        /// Larger than the limit the caller gave, in bytes.
        case tooLarge(limit: Int)

        var description: String {
            switch self {
            case .missing: "does not exist"
            case .unreadable(let reason): "cannot be read: \(reason)"
            case .notRegularFile(let kind): "is \(kind), not a regular file"
            case .tooLarge(let limit): "is larger than \(limit) bytes"
            }
        }
    }

    /// The whole content of the regular file at `path`, which must hold at
    /// most `limit` bytes. `followingLinks` false refuses a symbolic link
    /// (a request in ctl/, which anyone in group txrecon can write, must not
    /// make the daemon read what it points to).
    static func read(_ path: String, limit: Int, followingLinks: Bool = true) throws(Failure) -> Contents {
        let noFollow = followingLinks ? 0 : O_NOFOLLOW
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | noFollow)
        guard descriptor >= 0 else {
            let error = errno
            if error == ELOOP && !followingLinks { throw .notRegularFile(kind: "a symbolic link") }
            throw error == ENOENT ? .missing : .unreadable(reason: describe(error))
        }
        defer { close(descriptor) }

        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadable(reason: describe(errno)) }
        let type = status.st_mode & S_IFMT
        guard type == S_IFREG else { throw .notRegularFile(kind: kind(of: type)) }
        guard status.st_size <= limit else { throw .tooLarge(limit: limit) }

        // Read up to one byte past the limit: the file may have grown since
        // fstat, and a file over the limit is refused whatever its size said.
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(reason: describe(errno))
            }
            filled += count
        }
        guard filled <= limit else { throw .tooLarge(limit: limit) }
        bytes.removeSubrange(filled...)
        return Contents(bytes: bytes, mode: status.st_mode, owner: status.st_uid, links: UInt(status.st_nlink))
    }

    private static func describe(_ error: Int32) -> String {
        String(cString: strerror(error))
    }

    private static func kind(of type: mode_t) -> String {
        switch type {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "an unknown kind of file"
        }
    }
}
