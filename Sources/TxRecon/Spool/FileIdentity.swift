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
}
