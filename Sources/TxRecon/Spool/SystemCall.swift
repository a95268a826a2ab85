// SystemCall: thin, checked wrappers over the POSIX calls the spool uses, so
// that every failure becomes a `SpoolError` naming the operation, the path and
// errno's text. No policy lives here: callers decide what a failure means.
import CGlibcExtras
import Glibc

/// A failed file-system operation: what was tried, on which path, and why.
package struct SpoolError: Error, Sendable, Equatable, CustomStringConvertible {
    package var operation: String
    package var path: String
    package var code: Int32

    package init(_ operation: String, _ path: String, _ code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    package var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }

    /// Whether trying again cannot help: the name or the kind of file at
    /// the target is wrong (too long, a directory where a file belongs, a
    /// loop of links), not the state of the disk or the permissions, which
    /// change back. An item whose move fails so is set aside rather than
    /// tried (and delivered) again and again.
    var isPermanent: Bool {
        [ENAMETOOLONG, EINVAL, EISDIR, ENOTEMPTY, ELOOP].contains(code)
    }
}

package enum SystemCall {
    /// open(2)'s O_NOATIME, which Swift's Glibc module does not export (it
    /// is behind _GNU_SOURCE): 01000000 on x86-64 and arm64 alike
    /// (asm-generic/fcntl.h); 0, asking for nothing, anywhere else.
    #if arch(x86_64) || arch(arm64)
    static let openNoAccessTime: Int32 = 0o1000000
    #else
    static let openNoAccessTime: Int32 = 0
    #endif

    /// Retries a call interrupted by a signal.
    @inline(__always)
    static func retrying(_ call: () -> Int32) -> Int32 {
        while true {
            let result = call()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }

    static func rename(_ from: String, _ to: String) throws(SpoolError) {
        try rename(from, in: .workingDirectory, to: to, in: .workingDirectory)
    }

    /// rename(2) of `from` in `source` to `to` in `target`.
    static func rename(_ from: String, in source: SpoolDirectory, to: String,
                       in target: SpoolDirectory) throws(SpoolError) {
        let renamed = source.argument(from).withCString { from in
            target.argument(to).withCString { to in renameat(source.descriptor, from, target.descriptor, to) }
        }
        guard renamed == 0 else {
            throw SpoolError("rename to \(target.shown(to)) from", source.shown(from))
        }
    }

    /// Renames `from` to a name no other file has: a new name that exists
    /// already is an error (EEXIST), never replaced. renameat2's
    /// RENAME_NOREPLACE, one step. Where the file system or the kernel does
    /// not take the flag (EINVAL: NFS, some FUSE; ENOSYS), the name is
    /// looked up first and then renamed onto: a collision in between, which
    /// needs two producers picking one unique name in the same instant,
    /// would still replace. Not link(2) then unlink(2): for that instant the
    /// file would have two links, which intake refuses.
    static func renameToNewName(_ from: String, _ to: String) throws(SpoolError) {
        try renameToNewName(from, to) { from, to in
            renameat2(AT_FDCWD, from, AT_FDCWD, to, UInt32(TXR_RENAME_NOREPLACE)) == 0 ? 0 : errno
        }
    }

    /// `renameToNewName` with the one-step rename given: it returns 0 or
    /// its errno. Tests pass one that refuses the flag as NFS would, which
    /// no file system here does.
    static func renameToNewName(_ from: String, _ to: String,
                                noReplace: (String, String) -> Int32) throws(SpoolError) {
        let error = noReplace(from, to)
        guard error != 0 else { return }
        guard error == EINVAL || error == ENOSYS else { throw SpoolError("rename to \(to) from", from, error) }
        guard try linkStatus(to) == nil else { throw SpoolError("rename to \(to) from", from, EEXIST) }
        try rename(from, to)
    }

    /// What link(2) did.
    enum Linked {
        case linked
        /// `to` exists already.
        case exists
        /// No link is possible here: a directory, a file system without
        /// hard links, or fs.protected_hardlinks and a file of another user
        /// that the caller may not write (EPERM, EMLINK, EOPNOTSUPP, ENOSYS).
        case refused
    }

    /// Gives `from` the second name `to`; any other failure is thrown.
    static func link(_ from: String, _ to: String) throws(SpoolError) -> Linked {
        try link(from, in: .workingDirectory, to: to, in: .workingDirectory)
    }

    /// link(2) of `from` in `source` to `to` in `target`.
    static func link(_ from: String, in source: SpoolDirectory, to: String,
                     in target: SpoolDirectory) throws(SpoolError) -> Linked {
        let linked = source.argument(from).withCString { from in
            target.argument(to).withCString { to in linkat(source.descriptor, from, target.descriptor, to, 0) }
        }
        guard linked != 0 else { return .linked }
        switch errno {
        case EEXIST: return .exists
        case EPERM, EMLINK, EOPNOTSUPP, ENOSYS: return .refused
        default: throw SpoolError("link to \(target.shown(to)) from", source.shown(from))
        }
    }

    /// Moves `from` to `to` unless `to` exists (then returns false):
    /// renameat2's RENAME_NOREPLACE, one step, so that the file never has
    /// two names, which intake refuses in new/ (`hard-linked`): the
    /// receipt splitter moves its parts into new/ on a thread of its own
    /// while a scan may read it, and a crash between two steps would leave
    /// both names for good. Where the flag is not taken (EINVAL: NFS, some
    /// FUSE; ENOSYS), link(2) then unlink(2): a crash in between leaves
    /// both names, a duplicate and never a loss. What cannot be linked (a
    /// directory) is renamed then (no producer makes one under the same
    /// name at the same instant).
    static func renameNoReplace(_ from: String, _ to: String) throws(SpoolError) -> Bool {
        guard renameat2(AT_FDCWD, from, AT_FDCWD, to, UInt32(TXR_RENAME_NOREPLACE)) != 0 else { return true }
        switch errno {
        case EEXIST: return false
        case EINVAL, ENOSYS: break
        default: throw SpoolError("rename to \(to) from", from)
        }
        switch try link(from, to) {
        case .linked:
            try unlinkIfPresent(from)
            return true
        case .exists:
            return false
        case .refused:
            guard try linkStatus(to) == nil else { return false }
            try rename(from, to)
            return true
        }
    }

    /// Renames a file that may not exist; a missing source is not an error
    /// (a missing target directory is).
    static func renameIfPresent(_ from: String, _ to: String) throws(SpoolError) {
        do {
            try rename(from, to)
        } catch where error.code == ENOENT && isMissing(from) {
            return
        }
    }

    /// Whether nothing is at `path` now (false when that cannot be told).
    static func isMissing(_ path: String, in directory: SpoolDirectory = .workingDirectory) -> Bool {
        var info = stat()
        return directory.argument(path).withCString { fstatat(directory.descriptor, $0, &info, AT_SYMLINK_NOFOLLOW) } != 0
            && errno == ENOENT
    }

    /// Removes a file; a missing file is not an error.
    static func unlinkIfPresent(_ path: String, in directory: SpoolDirectory = .workingDirectory) throws(SpoolError) {
        guard directory.argument(path).withCString({ unlinkat(directory.descriptor, $0, 0) }) == 0 || errno == ENOENT else {
            throw SpoolError("unlink", directory.shown(path))
        }
    }

    static func makeDirectory(_ path: String, mode: mode_t) throws(SpoolError) {
        guard mkdir(path, mode) == 0 || errno == EEXIST else { throw SpoolError("mkdir", path) }
    }

    /// Writes out everything the file system holding `path` has not yet
    /// written (syncfs(2)), data and names, and waits for it: one call
    /// where a file of many would take an fsync each.
    static func syncFileSystem(of path: String) throws(SpoolError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError("open", path) }
        defer { close(fd) }
        guard syncfs(fd) == 0 else { throw SpoolError("syncfs", path) }
    }

    /// utimensat(2)'s UTIME_OMIT and UTIME_NOW, macros Swift does not
    /// import: the same on every Linux architecture.
    static let timeOmitted = (1 << 30) - 2
    static let timeNow = (1 << 30) - 1

    /// Sets `path`'s modification time to now; false when nothing is there.
    static func touch(_ path: String) throws(SpoolError) -> Bool {
        var times = [timespec(tv_sec: 0, tv_nsec: SystemCall.timeOmitted), timespec(tv_sec: 0, tv_nsec: SystemCall.timeNow)]
        guard utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return false }
            throw SpoolError("utimensat", path)
        }
        return true
    }

    /// Sets `path`'s modification time to `milliseconds` (since 1970) and
    /// fsyncs it, so that the time survives a crash as its contents do.
    static func setModificationTime(_ path: String, to milliseconds: Int64) throws(SpoolError) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError("open", path) }
        defer { close(fd) }
        let modified = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
        var times = [timespec(tv_sec: 0, tv_nsec: SystemCall.timeOmitted), modified]
        guard futimens(fd, &times) == 0 else { throw SpoolError("futimens", path) }
        guard fsync(fd) == 0 else { throw SpoolError("fsync", path) }
    }

    /// Flushes a directory's entries (renames and unlinks in it) to disk.
    static func syncDirectory(_ path: String) throws(SpoolError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SpoolError("fsync", path) }
    }

    /// `lstat(2)`; nil when the path does not exist.
    static func linkStatus(_ path: String, in directory: SpoolDirectory = .workingDirectory) throws(SpoolError) -> stat? {
        var info = stat()
        if directory.argument(path).withCString({ fstatat(directory.descriptor, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 {
            return info
        }
        if errno == ENOENT { return nil }
        throw SpoolError("lstat", directory.shown(path))
    }

    /// Names in a directory, without `.` and `..`, in directory order. Names
    /// that are not valid UTF-8 cannot be addressed through Swift strings:
    /// they are left out (`DirectoryReader.names(upTo:)` returns them apart).
    package static func listDirectory(_ path: String) throws(SpoolError) -> [String] {
        try DirectoryReader(path).names(upTo: .max).names
    }

    /// Calls `body` with each name in a directory (`.` and `..` included),
    /// read in place: the bytes are valid only during the call.
    static func forEachName(in path: String, _ body: (UnsafeRawBufferPointer) -> Void) throws(SpoolError) {
        try DirectoryReader(path).read { bytes in
            body(bytes)
            return true
        }
    }

    /// What `renameRawName` did.
    enum RawRename: Equatable {
        case renamed
        /// The new name exists already.
        case taken
        /// `directory/<bytes>` is gone (its producer removed or renamed it).
        case gone
    }

    /// Renames `directory/<bytes>` to `directory/<name>` unless that exists,
    /// for a name that is not UTF-8. Checked, then renamed: only the daemon
    /// renames within the directory it uses this on at that moment, and a
    /// producer's file created in between under the same new name is the
    /// one risk, which the caller's unusual name avoids.
    static func renameRawName(in directory: String, from bytes: [UInt8], to name: String) throws(SpoolError) -> RawRename {
        let target = directory + "/" + name
        guard try linkStatus(target) == nil else { return .taken }
        let source = Array((directory + "/").utf8).map { CChar(bitPattern: $0) } + bytes.map { CChar(bitPattern: $0) } + [0]
        guard Glibc.rename(source, target) == 0 else {
            // The producer owns the name and may take its file away between
            // the listing and here; new/ itself gone shows at the next listing.
            let code = errno
            if code == ENOENT && !isMissing(directory) { return .gone }
            throw SpoolError("rename to \(target) from", directory + "/" + String(decoding: bytes, as: UTF8.self), code)
        }
        return .renamed
    }

    /// Reads a whole regular file of at most `limit` bytes.
    package static func readFile(_ path: String, limit: Int) throws(SpoolError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError("open", path) }
        defer { close(fd) }
        return try readAll(fd, path: path, limit: limit)
    }

    /// Reads from `fd` until end of file; more than `limit` bytes is EFBIG.
    /// `statSize`: the size fstat gave for the regular file behind `fd`. A
    /// read that asked for more and brought the total to exactly that size
    /// ends the loop: a regular file reads short only at its end, so the
    /// read that would return 0 is saved (one system call per drop).
    static func readAll(_ fd: Int32, path: @autoclosure () -> String, limit: Int, statSize: Int? = nil) throws(SpoolError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: min(limit, max(statSize ?? 4096, 0)) + 1)
        var count = 0
        while true {
            if count == buffer.count {
                guard buffer.count <= limit else { throw SpoolError("read", path(), EFBIG) }
                buffer.append(contentsOf: repeatElement(0, count: min(buffer.count, limit + 1 - buffer.count)))
            }
            let got = buffer.withUnsafeMutableBytes { raw in
                Glibc.read(fd, raw.baseAddress! + count, raw.count - count)
            }
            if got < 0 {
                if errno == EINTR { continue }
                throw SpoolError("read", path())
            }
            if got == 0 { break }
            let askedForMore = count + got < buffer.count
            count += got
            if count > limit { throw SpoolError("read", path(), EFBIG) }
            if askedForMore, count == statSize { break }
        }
        buffer.removeSubrange(count...)
        return buffer
    }

    /// Writes `bytes` to a new file at `path` (which must not exist),
    /// optionally fsyncing it; the file is removed again if anything fails,
    /// so a partial file never stays behind under that name. `modifiedAt`
    /// (ms since 1970): the modification time to give it instead of now.
    /// `mode` is 0640 unless said: what the daemon writes, group txrecon
    /// (its producers) may read but never change (the status file, a
    /// failure record, a hold's reason, a staged replay: the units' UMask=
    /// 0007 would leave 0660 group-writable). `exactMode`: `mode` whatever
    /// the caller's umask (a file another user must read: the daemon reads
    /// a root-written drop through its group).
    package static func writeNewFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o640, exactMode: Bool = false,
                                     sync: Bool, modifiedAt: Int64? = nil) throws(SpoolError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SpoolError("create", path) }
        var failure: SpoolError?
        if exactMode, fchmod(fd, mode) != 0 { failure = SpoolError("fchmod", path) }
        var written = 0
        while failure == nil, written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                failure = SpoolError("write", path)
                break
            }
            written += result
        }
        if failure == nil, let modifiedAt {
            let modified = timespec(tv_sec: Int(modifiedAt / 1000), tv_nsec: Int(modifiedAt % 1000) * 1_000_000)
            var times = [timespec(tv_sec: 0, tv_nsec: SystemCall.timeOmitted), modified]
            if futimens(fd, &times) != 0 { failure = SpoolError("futimens", path) }
        }
        if failure == nil, sync, fsync(fd) != 0 { failure = SpoolError("fsync", path) }
        if close(fd) != 0, failure == nil { failure = SpoolError("close", path) }
        if let failure {
            unlink(path)
            throw failure
        }
    }

    /// Creates `path` holding `bytes` unless something is there already
    /// (then returns false), through `temporaryName` and link(2): readers
    /// never see it half written, and of two threads placing the same path
    /// one wins. Where links are refused, checked and then renamed.
    static func placeNewFile(_ path: String, _ bytes: [UInt8], temporaryName: String) throws(SpoolError) -> Bool {
        try unlinkIfPresent(temporaryName)
        try writeNewFile(temporaryName, bytes, sync: false)
        do {
            switch try link(temporaryName, path) {
            case .linked:
                try unlinkIfPresent(temporaryName)
                return true
            case .exists:
                try unlinkIfPresent(temporaryName)
                return false
            case .refused:
                guard try linkStatus(path) == nil else {
                    try unlinkIfPresent(temporaryName)
                    return false
                }
                try rename(temporaryName, path)
                return true
            }
        } catch {
            _ = Glibc.unlink(temporaryName)
            throw error
        }
    }

    /// Replaces `path` with `bytes` through a temporary name beside it and a
    /// rename, so readers see the old content or the new, never a mix. A new
    /// file gets `mode` (default 0640) less the umask.
    static func replaceFile(_ path: String, _ bytes: [UInt8], temporaryName: String, sync: Bool,
                            mode: mode_t = 0o640) throws(SpoolError) {
        try unlinkIfPresent(temporaryName)
        try writeNewFile(temporaryName, bytes, mode: mode, sync: sync)
        do {
            try rename(temporaryName, path)
        } catch {
            unlink(temporaryName)
            throw error
        }
    }
}
