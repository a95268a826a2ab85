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
//   receipts/  StoreKit 1 receipts the daemon split (verified, unless
//              Mode=none), stored once each
//              under the SHA-256 of their bytes (ReceiptStore); the parts
//              of a receipt upload name them instead of carrying them
//   sweep/, reconcile/
//              the state of txrecon sweep, reconcile and import for the
//              main file's app; apps/NAME/{sweep,reconcile}/ for the app
//              of apps/NAME.conf (Apple's limits and checkpoints are per app)
//   destinations/NAME/{new,queue,hold,done}
//              with further destinations (destinations/NAME.conf): each
//              destination's own items, the same files as above. new/ there
//              is the destination's inbox, which intake links each drop
//              into; `[Backend]` then has destinations/backend/new/ as its
//              inbox and keeps queue/, hold/ and done/ (see Spool+FanOut).
import Glibc

/// The directory tree of one spool, as one destination's engine sees it:
/// `new`, `queue`, `hold` and `done` are the destination's; the rest are the
/// spool's.
package struct SpoolLayout: Sendable, Equatable {
    package let root: String
    /// `new` and the item directories relative to `root`: `new`, `` (queue/
    /// … at the top), or `destinations/NAME/`.
    private let inboxPath: String
    private let itemPrefix: String

    package init(root: String) {
        self.init(root: root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root,
                  inboxPath: "new", itemPrefix: "")
    }

    private init(root: String, inboxPath: String, itemPrefix: String) {
        self.root = root
        self.inboxPath = inboxPath
        self.itemPrefix = itemPrefix
        stateRoot = root
        tmp = root + "/tmp"
        new = root + "/" + inboxPath
        queue = root + "/" + itemPrefix + "queue"
        hold = root + "/" + itemPrefix + "hold"
        done = root + "/" + itemPrefix + "done"
    }

    /// Where the destination `name`'s items are: its own directories, or,
    /// for `[Backend]` (`Destination.primaryName`), queue/, hold/ and done/
    /// with destinations/backend/new/ as its inbox.
    package func destination(_ name: String) -> SpoolLayout {
        let base = "destinations/" + name + "/"
        return SpoolLayout(root: root, inboxPath: base + "new",
                           itemPrefix: name == Destination.primaryName ? "" : base)
    }

    /// The layout whose `stateRoot` is the app `name`'s: the spool itself
    /// for the main file's app (where its state always was), else
    /// `apps/NAME`.
    package func app(_ name: String) -> SpoolLayout {
        var layout = self
        layout.stateRoot = name == App.mainName ? root : root + "/apps/" + name
        return layout
    }

    /// Where one app's commands keep their state (`sweep/`, `reconcile/`).
    package private(set) var stateRoot: String

    /// Creates `stateRoot` (and apps/) when it is an app's own.
    func createStateRoot() throws(SpoolError) {
        guard stateRoot != root else { return }
        try Self.makeDirectory(root + "/apps", mode: 0o2750)
        try Self.makeDirectory(stateRoot, mode: 0o2750)
    }

    /// The directory that holds every destination's own directories.
    package var destinations: String { root + "/destinations" }

    // Stored, not computed: the engine builds paths from these several
    // times per delivered item, and each concatenation is an allocation.
    package let tmp: String
    package let new: String
    package let queue: String
    package let hold: String
    package var rejected: String { root + "/rejected" }
    package let done: String
    /// `new`, `queue`, `hold` or `done` as the spool's files name it
    /// (`queue/KEY`, `destinations/NAME/queue/KEY`), for logs and reasons.
    func relative(_ location: SpoolLocation?) -> String {
        guard let location else { return inboxPath }
        return itemPrefix + location.rawValue
    }
    package var ctl: String { root + "/ctl" }
    /// The daemon's store of the receipts it split, one file per receipt
    /// (ReceiptStore); the spool's, shared by every destination.
    package var receipts: String { root + "/receipts" }
    /// Held (flock) by the running daemon: one writer per spool.
    package var lockFile: String { root + "/txrecon.lock" }
    /// The running daemon's state for `txrecon status`, rewritten on change.
    package var statusFile: String { root + "/txrecon.status" }

    /// Producers and the CLI (group txrecon) write tmp/, new/ and ctl/; only
    /// the daemon writes the state directories and receipts/, which the
    /// group may read. As systemd/txrecon.tmpfiles makes them: the sticky
    /// bit on the three the group writes keeps one member from renaming or
    /// removing another's file (a root-owned replay request in ctl/ above
    /// all), while the daemon, their owner, moves every file out.
    var directoryModes: [(path: String, mode: mode_t)] {
        [(tmp, 0o3770), (new, 0o3770), (ctl, 0o3770),
         (queue, 0o2750), (hold, 0o2750), (rejected, 0o2750), (done, 0o2750), (receipts, 0o2750)]
    }

    /// Creates the root and any missing subdirectory. Existing directories
    /// keep their modes: the operator's (or tmpfiles') choice wins.
    package func createMissingDirectories() throws(SpoolError) {
        try Self.makeDirectory(root, mode: 0o2750)
        for (path, mode) in directoryModes {
            try Self.makeDirectory(path, mode: mode)
        }
    }

    /// Creates what a destination's layout (`destination(_:)`) needs beyond
    /// the spool's own directories; only the daemon writes any of them.
    func createMissingDestinationDirectories() throws(SpoolError) {
        try Self.makeDirectory(destinations, mode: 0o2750)
        try Self.makeDirectory(String(new.dropLast("/new".count)), mode: 0o2750)
        for path in [new, queue, hold, done] {
            try Self.makeDirectory(path, mode: 0o2750)
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
