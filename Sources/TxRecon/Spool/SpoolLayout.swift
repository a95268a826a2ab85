// SpoolLayout: where things are in the spool directory and which modes the
// daemon gives the directories it has to create itself (normally
// systemd-tmpfiles has made them already).
//
//   tmp/       producers write here, then rename into new/ (the Maildir rule)
//   new/       the inbox, watched with inotify
//   queue/     accepted items waiting for delivery; KEY and KEY.state
//   hold/      items that need an operator; KEY and KEY.reason
//   rejected/  unreadable inputs, never deleted automatically; NAME and NAME.reason
//   done/      delivered (KEY) and superseded (KEY.superseded-…) snapshots
//   ctl/       requests from the txrecon CLI, and the daemon's answers
import Glibc

/// The directory tree of one spool.
public struct SpoolLayout: Sendable, Equatable {
    public let root: String

    public init(root: String) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    public var tmp: String { root + "/tmp" }
    public var new: String { root + "/new" }
    public var queue: String { root + "/queue" }
    public var hold: String { root + "/hold" }
    public var rejected: String { root + "/rejected" }
    public var done: String { root + "/done" }
    public var ctl: String { root + "/ctl" }
    /// Held (flock) by the running daemon: one writer per spool.
    public var lockFile: String { root + "/txrecon.lock" }
    /// The running daemon's state for `txrecon status`, rewritten on change.
    public var statusFile: String { root + "/txrecon.status" }

    /// Producers and the CLI (group txrecon) write tmp/, new/ and ctl/; only
    /// the daemon writes the state directories, which the group may read.
    var directoryModes: [(path: String, mode: mode_t)] {
        [(tmp, 0o2770), (new, 0o2770), (ctl, 0o2770),
         (queue, 0o2750), (hold, 0o2750), (rejected, 0o2750), (done, 0o2750)]
    }

    /// Creates the root and any missing subdirectory. Existing directories
    /// keep their modes: the operator's (or tmpfiles') choice wins.
    public func createMissingDirectories() throws(SpoolError) {
        try Self.makeDirectory(root, mode: 0o2750)
        for (path, mode) in directoryModes {
            try Self.makeDirectory(path, mode: mode)
        }
    }

    /// mkdir(2) of a spool directory; an existing one is left as it is. The
    /// units' RestrictSUIDSGID=yes makes seccomp refuse, with EPERM, any
    /// mkdir whose mode has the setgid bit, even for a directory that exists.
    /// The directory is then made without the bit; the tmpfiles entry puts it
    /// back at the next boot (or `systemd-tmpfiles --create`).
    static func makeDirectory(_ path: String, mode: mode_t) throws(SpoolError) {
        do throws(SpoolError) {
            try SystemCall.makeDirectory(path, mode: mode)
        } catch where error.code == EPERM && mode & S_ISGID != 0 {
            try SystemCall.makeDirectory(path, mode: mode & ~S_ISGID)
        }
    }
}
