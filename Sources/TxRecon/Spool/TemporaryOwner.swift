// TemporaryOwner: whose file a name in tmp/ is, decided here and nowhere
// else. Producers write tmp/ under names of their own (`txrecon submit`
// and the sweep: Maildir names, which never start with a dot; the CLI's
// `.ctl-` requests), and so do the daemon and the receiver, each under
// prefixes of its own (`TemporaryFile`). Each of the two removes its own
// at start while it holds the lock that makes it the only one of its kind
// on the spool (txrecon.lock, receive/lock): whatever it then finds under
// its prefixes an earlier process of its kind left behind (SIGKILL, a
// crash, a power cut during a write), never a file another program may
// still be writing.
// Reports: nothing itself; `leftoversRemoved` is the entry its caller logs.

enum TemporaryOwner: CaseIterable {
    /// `txrecon run`.
    case daemon
    /// `txrecon receive`.
    case receiver

    /// Whether `name` in tmp/ is this owner's.
    func owns(_ name: String) -> Bool {
        TemporaryFile.allCases.contains { $0.owner == self && name.hasPrefix($0.rawValue) }
    }

    /// Removes this owner's files from `layout`'s tmp/; returns how many.
    /// Call only while holding the owner's lock.
    func removeLeftovers(in layout: SpoolLayout) throws(SpoolError) -> Int {
        var removed = 0
        for name in try SystemCall.listDirectory(layout.tmp) where owns(name) {
            try SystemCall.unlinkIfPresent(layout.tmp + "/" + name)
            removed += 1
        }
        return removed
    }

    /// The start's entry for `count` files removed.
    func leftoversRemoved(_ count: Int, in layout: SpoolLayout) -> LogEntry {
        let program = self == .daemon ? "txrecon run" : "txrecon receive"
        return LogEntry(.notice, "removed \(count) unfinished file(s) an earlier \(program) left in \(layout.tmp) "
                        + "(it was stopped by SIGKILL, a crash or a power cut while writing them); none was in new/ "
                        + "yet, so nothing it acknowledged is affected")
    }
}

/// What a file the daemon or the receiver writes in tmp/ is for; its name
/// begins with the raw value. No prefix begins with another.
enum TemporaryFile: String, CaseIterable {
    /// The daemon's copy of a drop for a further destination.
    case copy = ".txrecon-copy-"
    /// The daemon's copy of a drop returned from a destination's inbox.
    case returned = ".txrecon-return-"
    /// A part of a history page or a receipt upload the daemon splits.
    case split = ".txrecon-split-"
    /// The receiver's body before its rename into new/, and the file
    /// /healthz writes to see that one more notification fits.
    case received = ".txrecon-receive-"

    var owner: TemporaryOwner {
        switch self {
        case .copy, .returned, .split: .daemon
        case .received: .receiver
        }
    }

    /// tmp/ in `layout` under this purpose's prefix and `unique`.
    func path(in layout: SpoolLayout, _ unique: String) -> String {
        layout.tmp + "/" + rawValue + unique
    }
}
