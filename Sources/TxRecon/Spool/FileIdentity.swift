// FileIdentity: which file a name refers to, so that two names can be told
// to be one file (hard links). Reports nothing.
import Glibc

/// A file's device and inode number: equal for every name of one file.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// The file `path` names now (lstat(2)); nil when there is none, and
    /// throws when that cannot be told.
    static func of(_ path: String) throws(SpoolError) -> FileIdentity? {
        try SystemCall.linkStatus(path).map(FileIdentity.init)
    }
}

/// A file as one look at it found it: its identity and its producer's write
/// time (mtime), to tell a later look whether the name still holds that
/// file. A file system gives the inode number of a file just removed to the
/// next one, which has a write time of its own. Not the ctime: a rename of
/// the file, or a link or unlink of another of its names (one per
/// destination), changes it.
struct WrittenFile: Equatable, Sendable {
    var file: FileIdentity
    /// Nanoseconds since 1970.
    var writtenAt: Int64

    init(_ info: stat) {
        file = FileIdentity(info)
        writtenAt = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }
}
