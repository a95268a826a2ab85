// ReceiverStateDirectory: `<spool>/receive/`, where `txrecon receive` says
// what it does, for `txrecon status`:
//
//   lock     flock(2)ed for the receiver's whole life: one receiver per
//            spool, and `txrecon status` asks it whether one runs
//   status   the running receiver's counts (JSON), replaced by rename
//
// Beside the spool so that `txrecon status` finds it from the configuration
// alone; the receive unit may write the whole spool directory (its tmp/ and
// new/ must be on one mount for rename), so no other ReadWritePaths= is
// needed. The directory is made 2750 (tmpfiles makes it 0750) and the
// files 0640: group txrecon reads them. The status file is not fsynced:
// after a crash it may be an update behind, and the next one replaces it.
// Reports: nothing; failures are SpoolErrors naming the path.
import Glibc

final class ReceiverStateDirectory: Sendable {
    let path: String
    private let lockDescriptor: Int32

    var statusPath: String { path + "/status" }

    static func path(of layout: SpoolLayout) -> String { layout.root + "/receive" }
    static func lockPath(of layout: SpoolLayout) -> String { path(of: layout) + "/lock" }

    /// Creates the directory if needed and takes its lock; fails with
    /// EWOULDBLOCK when another receiver holds it.
    init(layout: SpoolLayout) throws(SpoolError) {
        path = Self.path(of: layout)
        try SpoolLayout.makeDirectory(path, mode: 0o2750)
        let lockPath = Self.lockPath(of: layout)
        do {
            lockDescriptor = try LockFile.acquire(lockPath)
        } catch where error.code == EWOULDBLOCK {
            throw SpoolError("another txrecon receive serves this spool (it holds the lock); stop it first, "
                             + "or give this one a spool of its own", lockPath, error.code)
        }
    }

    deinit {
        LockFile.release(lockDescriptor)
    }

    /// Replaces the status file with `document`.
    func writeStatus(_ document: JSONValue) throws(SpoolError) {
        try SystemCall.replaceFile(statusPath, document.serialized, temporaryName: path + "/.status.tmp",
                                   sync: false, mode: 0o640)
    }

    /// Whether a receiver holds the lock of the spool at `layout` now.
    static func isHeld(_ layout: SpoolLayout) -> Bool { LockFile.isHeld(lockPath(of: layout)) }
}
