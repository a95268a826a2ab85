// Spool: every move of a file between the spool's state directories, and
// nothing else. The commit point of each transition is one rename(2) within
// the spool's file system, so a crash at any instant leaves each item in
// exactly one directory; but a delivered item gets its name in done/ by
// link(2) and then loses the old one, and a crash in between leaves one file
// under both names, which start-up recognises as delivered
// (docs/crash-consistency.md gives the full argument).
//
//   new/NAME      -> queue/KEY                     accept (or a first attempt failed)
//   new/NAME      -> done/KEY (or unlinked)         finish a first attempt (delivered)
//   new/NAME      -> hold/KEY (+ .reason)           hold a first attempt (refused)
//   new/NAME      -> rejected/NAME (+ .reason)      reject
//   new/NAME      -> done/KEY.superseded-…          supersede a stale drop
//   new/NAME      -> receipts/.split-N-NAME         set a page or receipt upload aside to split it
//                                                   (Spool+Aside; put back into new/ at start)
//   receipts/.split-… -> new/NAME.N …               split, the only path that syncs (one syncfs)
//   queue/KEY     -> done/KEY (or unlinked)         finish (delivered)
//   queue/KEY.state -> done/KEY.state (or unlinked) retireState, later (the engine batches it)
//   queue/KEY     -> hold/KEY (+ .reason)           hold
//   queue|hold/KEY -> done/KEY.superseded-…         supersede a pending snapshot
//   hold/KEY      -> queue/KEY                      release (operator)
//   rejected/NAME -> new/NAME                       requeue (operator)
//
// Only the daemon calls these; the CLI writes into tmp/, new/ and ctl/ only.
// Errors are thrown as SpoolError; nothing is logged here.
import Glibc
import Synchronization

/// The state directories an item can be in.
package enum SpoolLocation: String, Sendable, CaseIterable {
    case queue, hold, done
}

/// What reading one drop in new/ found.
enum DropContent: Equatable {
    /// The file's bytes and its modification time (ms since 1970), which is
    /// when the producer wrote it: the item's `receivedAt`; `file`: which
    /// file the name held, for a split to set aside that one and no other.
    case bytes([UInt8], modifiedAt: Int64, file: WrittenFile)
    /// A regular file with `names` hard links, read only so that its key can
    /// tell whether its other name is done/KEY (`isDelivered`): a delivery
    /// whose finish was interrupted between its link into done/ and the
    /// unlink of this name. Any other such file is refused (`hardLinked`).
    case linked([UInt8], modifiedAt: Int64, file: WrittenFile, names: Int)
    /// The name is no longer there (taken already, or a duplicate event).
    case gone
    /// Not something intake reads: a symlink, FIFO, device, directory, or
    /// too large. The file is left untouched for `reject`.
    case refused(Rejection)
}

/// A queued item as the spool holds it at start-up.
struct QueuedFile: Equatable {
    var key: ItemKey
    var state: DeliveryState?
    var receivedAt: Int64
}

/// What `Spool.restoreQueue` found in queue/.
struct RestoredQueue {
    var items: [QueuedFile] = []
    /// Names that are not items txrecon wrote; left alone.
    var foreign: [String] = []
    /// Items delivered whose move into done/ was interrupted.
    var delivered: [ItemKey] = []
    /// Items whose failure record was empty or unreadable (a power cut
    /// caught its write, which is not fsynced): removed, the item restored
    /// as never tried.
    var lostRecords: [ItemKey] = []

    /// What the operator is told about what a start found in queue/.
    var notes: [LogEntry] {
        foreign.map { LogEntry(.warning, "queue/\(LogText.escaped($0)) is not an item txrecon wrote; left alone") }
            + delivered.map {
                LogEntry(.notice, "\($0): delivered before the last stop, which interrupted its move into done/; "
                         + "its name in queue/ removed")
            }
            + lostRecords.map {
                LogEntry(.notice, "\($0): its failure record queue/\($0.fileName).state was empty or unreadable (a "
                         + "power cut during its write, which is not fsynced) and is removed: it is tried at once, "
                         + "its attempts counted from 1 again; nothing is lost", fields: [("TXRECON_ID", $0.rawValue)])
            }
    }
}

/// The spool's file operations. Thread-safe: the only mutable state is a
/// counter that makes superseded and rejected names unique, and whether the
/// file system refused a hard link.
package final class Spool: Sendable {
    package let layout: SpoolLayout
    private let uniqueCounter = Atomic<Int>(0)
    /// Set once link(2) was refused (a file system without hard links, or
    /// fs.protected_hardlinks and a producer's file txrecon may not write):
    /// `finish` renames from then on, rather than fail a link per item.
    private let linksRefused = Atomic<Bool>(false)
    /// The daemon's user, whose drops `readDrop` may open without an access
    /// time update; asked once, since geteuid(2) is a system call per drop.
    private let effectiveUser = geteuid()

    /// The inboxes of the destinations intake links each drop into
    /// (Spool+FanOut); empty with one destination.
    let fanOutInboxes: [String]

    /// new/, queue/ and done/, held open: the hot path (reading a drop,
    /// finishing and accepting an item) names files by their own names
    /// relative to them (SpoolDirectory).
    private let inboxDirectory: SpoolDirectory
    private let queueDirectory: SpoolDirectory
    private let doneDirectory: SpoolDirectory

    package init(layout: SpoolLayout, fanOutInboxes: [String] = []) {
        self.layout = layout
        self.fanOutInboxes = fanOutInboxes
        inboxDirectory = SpoolDirectory.open(layout.new)
        queueDirectory = SpoolDirectory.open(layout.queue)
        doneDirectory = SpoolDirectory.open(layout.done)
    }

    /// A number no other call on this spool gets, for temporary names.
    func uniqueNumber() -> Int { uniqueCounter.add(1, ordering: .relaxed).newValue }

    func path(_ location: SpoolLocation, _ key: ItemKey) -> String {
        directory(location) + "/" + key.fileName
    }

    func directory(_ location: SpoolLocation) -> String {
        switch location {
        case .queue: return layout.queue
        case .hold: return layout.hold
        case .done: return layout.done
        }
    }

    // MARK: Inbox

    /// Gives a drop whose name is not UTF-8 (which Swift cannot address) a
    /// name that is: the invalid bytes become U+FFFD and `.not-utf8` is
    /// added, plus `.N` if that is taken. Returns the new name, or nil when
    /// the drop is gone (its producer took it away after the listing).
    func renameUndecodableDrop(_ bytes: [UInt8]) throws(SpoolError) -> String? {
        let base = Spool.prefix(of: String(decoding: bytes, as: UTF8.self), maximumBytes: 180) + ".not-utf8"
        var candidate = base
        while true {
            switch try SystemCall.renameRawName(in: layout.new, from: bytes, to: candidate) {
            case .renamed: return candidate
            case .gone: return nil
            case .taken: candidate = "\(base).\(uniqueCounter.add(1, ordering: .relaxed).newValue)"
            }
        }
    }

    /// How a regular file that appeared in new/ by creation (IN_CREATE)
    /// came to be there.
    enum InboxCreation: Equatable {
        /// Created here by a writer who may still be writing it.
        case writtenHere
        /// Given its name here after it was written elsewhere (link(2): a
        /// second name, or a first one whose change time is well after its
        /// modification time, as link-then-unlink and requeue-rejected leave
        /// it): complete, never closed here.
        case linkedIn
    }

    /// How new/NAME came to be there; nil when it is gone or not a regular file.
    func creationInInbox(_ name: String) -> InboxCreation? {
        guard let info = try? SystemCall.linkStatus(layout.new + "/" + name),
              info.st_mode & S_IFMT == S_IFREG else { return nil }
        let changedAfterWrite = (Int64(info.st_ctim.tv_sec) - Int64(info.st_mtim.tv_sec)) * 1000
            + (Int64(info.st_ctim.tv_nsec) - Int64(info.st_mtim.tv_nsec)) / 1_000_000
        return info.st_nlink == 1 && changedAfterWrite < 1000 ? .writtenHere : .linkedIn
    }

    /// Reads one drop without ever blocking on it or following a link:
    /// lstat first (never open a device or FIFO), then open with
    /// O_NOFOLLOW|O_NONBLOCK and check again with fstat (the name may have
    /// been replaced in between).
    func readDrop(_ name: String, maximumSize: Int) throws(SpoolError) -> DropContent {
        guard let info = try SystemCall.linkStatus(name, in: inboxDirectory) else { return .gone }
        if let refusal = Spool.refusal(for: info, maximumSize: maximumSize) { return .refused(refusal) }
        // The first read of a fresh file would update its access time, a
        // write to its inode that nobody reads (2 % of a drain's CPU here).
        // The kernel lets only the file's owner ask it not to (EPERM: the
        // name was given to another owner's file since the lstat).
        let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
        let noAccessTime = info.st_uid == effectiveUser ? SystemCall.openNoAccessTime : 0
        let fd = inboxDirectory.argument(name).withCString { path in
            let fd = openat(inboxDirectory.descriptor, path, flags | noAccessTime)
            return fd < 0 && errno == EPERM && noAccessTime != 0 ? openat(inboxDirectory.descriptor, path, flags) : fd
        }
        if fd < 0 {
            switch errno {
            case ENOENT: return .gone
            case ELOOP: return .refused(Rejection("not-a-regular-file", "it is a symbolic link; drop the file itself"))
            case EACCES: return .refused(Rejection("unreadable", "txrecon may not read it (permission denied); let group txrecon read it"))
            default: throw SpoolError("open", inboxDirectory.shown(name))
            }
        }
        defer { close(fd) }
        var opened = stat()
        guard fstat(fd, &opened) == 0 else { throw SpoolError("fstat", inboxDirectory.shown(name)) }
        if let refusal = Spool.refusal(for: opened, maximumSize: maximumSize) { return .refused(refusal) }
        do {
            let bytes = try SystemCall.readAll(fd, path: inboxDirectory.shown(name), limit: maximumSize, statSize: Int(opened.st_size))
            let modifiedAt = Spool.modifiedMilliseconds(opened)
            guard opened.st_nlink == 1 else {
                return .linked(bytes, modifiedAt: modifiedAt, file: WrittenFile(opened), names: Int(opened.st_nlink))
            }
            return .bytes(bytes, modifiedAt: modifiedAt, file: WrittenFile(opened))
        } catch where error.code == EFBIG {
            return .refused(Spool.tooLarge(maximumSize))
        }
    }

    static func modifiedMilliseconds(_ info: stat) -> Int64 {
        Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
    }

    private static func refusal(for info: stat, maximumSize: Int) -> Rejection? {
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            return Int(info.st_size) > maximumSize ? tooLarge(maximumSize) : nil
        case S_IFLNK: return Rejection("not-a-regular-file", "it is a symbolic link; drop the file itself")
        case S_IFIFO: return Rejection("not-a-regular-file", "it is a FIFO; drop a regular file")
        case S_IFDIR: return Rejection("not-a-regular-file", "it is a directory; drop one file per transaction")
        case S_IFCHR, S_IFBLK: return Rejection("not-a-regular-file", "it is a device node; drop a regular file")
        case S_IFSOCK: return Rejection("not-a-regular-file", "it is a socket; drop a regular file")
        default: return Rejection("not-a-regular-file", "it is not a regular file")
        }
    }

    /// Why a drop with other names is refused, unless the other is done/KEY
    /// (`DropContent.linked`): another name for the same inode could change
    /// the item after it was checked, under queue/ (Postfix's pickup refuses
    /// these too).
    static func hardLinked(names: Int) -> Rejection {
        Rejection("hard-linked", "it has \(names) names (hard links), so it could change after "
                  + "intake; drop a copy of its own (write it in tmp/, then rename it into new/)")
    }

    /// Whether done/KEY is `file`: the item was delivered, and `file`'s other
    /// name is left over from a finish that did not get to remove it.
    func isDelivered(_ key: ItemKey, sameFileAs file: FileIdentity) -> Bool {
        guard let info = try? SystemCall.linkStatus(path(.done, key)) else { return false }
        return FileIdentity(info) == file
    }

    /// A file larger than `MaxFileSize=`: refused at intake, and held when
    /// a queued one is found so after the setting was lowered.
    static func tooLarge(_ maximumSize: Int) -> Rejection {
        Rejection("too-large", "it is larger than MaxFileSize= (\(maximumSize) bytes); one transaction is a few KiB")
    }

    /// new/NAME -> queue/KEY. Replaces nothing: the engine has moved any
    /// pending snapshot of KEY away first.
    func accept(drop name: String, as key: ItemKey) throws(SpoolError) {
        try SystemCall.rename(name, in: inboxDirectory, to: key.fileName, in: queueDirectory)
    }

    /// Whether a move failed because new/NAME is not there (any more): a
    /// drop read twice, the second time by a scan while the engine took it.
    func isGoneFromInbox(_ name: String, after error: SpoolError) -> Bool {
        error.code == ENOENT && SystemCall.isMissing(name, in: inboxDirectory)
    }

    /// new/NAME -> rejected/NAME with NAME.reason beside it. The reason is
    /// written first: a crash in between leaves the drop in new/ (taken again
    /// at start) and an orphan reason (removed at start).
    /// Returns the name in rejected/.
    @discardableResult
    func reject(drop name: String, because rejection: Rejection, at now: Int64) throws(SpoolError) -> String {
        // A leading dot would hide the file from listings, and `.tmp-` names
        // are the daemon's own leftovers, removed at start: never a producer's.
        // A name near NAME_MAX is shortened so that NAME.reason still fits.
        let base = Spool.prefix(of: name.hasPrefix(".") ? "_" + name : name, maximumBytes: 200)
        return try moveToRejected(layout.new + "/" + name, base: base, file: name, because: rejection, at: now)
    }

    /// An item the spool cannot finish, hold or read under its key, for a
    /// reason that will not go away by itself (`SpoolError.isPermanent`):
    /// queue/KEY (or new/`inbox`, see `finish`) -> rejected/NAME with
    /// NAME.reason, and its failure record removed, so that it is neither
    /// delivered nor tried again and again. `requeue-rejected` takes it
    /// again after a fix. Returns the name in rejected/.
    func setAside(_ key: ItemKey, inbox: String? = nil, because rejection: Rejection,
                  at now: Int64) throws(SpoolError) -> String {
        let source = inbox.map { layout.relative(nil) + "/" + $0 } ?? layout.relative(.queue) + "/" + key.fileName
        let target = try moveToRejected(layout.root + "/" + source, base: key.fileName, file: source,
                                        because: rejection, at: now)
        if inbox == nil { try SystemCall.unlinkIfPresent(path(.queue, key) + ".state") }
        return target
    }

    /// `source` -> rejected/NAME (NAME: `base` or `base.N`) with NAME.reason
    /// written first: a crash in between leaves the file where it was and an
    /// orphan reason (removed at start). `file` names the source for people.
    /// The reason, placed only where none is, claims the name: intake
    /// rejecting a drop and the engine setting an item aside under the same
    /// name at once never pick the same one (a rename onto it would lose one).
    func moveToRejected(_ source: String, base: String, file: String, because rejection: Rejection,
                                at now: Int64) throws(SpoolError) -> String {
        var target = base.hasSuffix(".reason") ? base + ".input" : base
        while true {
            if try SystemCall.linkStatus(layout.rejected + "/" + target) == nil {
                let reason = Spool.rejectionText(file: file, storedAs: target, rejection: rejection, at: now)
                let temporary = layout.rejected + "/.tmp-\(target).reason.\(UInt64.random(in: 0 ... .max))"
                if try SystemCall.placeNewFile(layout.rejected + "/" + target + ".reason", Array(reason.utf8),
                                               temporaryName: temporary) {
                    do {
                        try SystemCall.rename(source, layout.rejected + "/" + target)
                    } catch {
                        // Left where it was (a producer's directory the daemon
                        // may not move: its ".." needs write permission), so
                        // the reason is no one's; kept, every retry would add
                        // another, counted and listed as a rejected file.
                        try? SystemCall.unlinkIfPresent(layout.rejected + "/" + target + ".reason")
                        throw error
                    }
                    return target
                }
            }
            target = "\(base).\(uniqueCounter.add(1, ordering: .relaxed).newValue)"
        }
    }

    /// rejected/`storedAs`.reason: why, where the file came from, and the
    /// command that takes it again.
    static func rejectionText(file: String, storedAs target: String, rejection: Rejection, at now: Int64) -> String {
        """
        \(rejection.code): \(rejection.detail)
        file: \(LogText.escaped(file))
        rejected-at: \(Timestamp.rfc3339(milliseconds: now))
        to retry: fix the producer or the configuration, then `txrecon requeue-rejected \(LogText.escaped(target))`; \
        rejected files are never deleted automatically

        """
    }

    /// What `requeueRejected` did.
    enum Requeued: Equatable {
        case requeued
        /// No such name in rejected/.
        case missing
        /// The name is a directory, FIFO or other non-file set aside from
        /// new/: moved back it would only be rejected again.
        case notRegularFile
    }

    /// rejected/NAME -> new/NAME (its .reason removed): intake reads it
    /// again. Only a regular file is moved, and only under a name
    /// `ControlRequest.isValid` accepts (callers check; checked again here,
    /// for an empty name would be rejected/ itself).
    func requeueRejected(_ name: String) throws(SpoolError) -> Requeued {
        guard ControlRequest.isValid(name, for: .requeueRejected),
              let info = try SystemCall.linkStatus(layout.rejected + "/" + name) else { return .missing }
        guard info.st_mode & S_IFMT == S_IFREG else { return .notRegularFile }
        try moveIntoInbox(layout.rejected + "/" + name, base: name)
        try SystemCall.unlinkIfPresent(layout.rejected + "/" + name + ".reason")
        return .requeued
    }

    /// Names of rejected inputs (not their reasons).
    func rejectedNames() throws(SpoolError) -> [String] {
        let names = try SystemCall.listDirectory(layout.rejected)
        let present = Set(names)
        return names.filter { name in
            !name.hasPrefix(".tmp-") && !(name.hasSuffix(".reason") && present.contains(String(name.dropLast(7))))
        }
    }

    /// A drop older than or equal to what is pending or delivered:
    /// new/NAME -> done/KEY.superseded-VERSION-….
    func supersede(drop name: String, key: ItemKey, version: ItemVersion) throws(SpoolError) {
        try retire(layout.new + "/" + name, key: key, version: version)
    }

    /// A pending snapshot replaced by a newer one: queue/KEY or hold/KEY ->
    /// done/KEY.superseded-VERSION-…. A held snapshot's .reason goes with
    /// it; a queued one's .state stays, for it is the key's backoff and the
    /// newer snapshot that takes the name inherits it.
    func supersede(_ location: SpoolLocation, key: ItemKey, version: ItemVersion) throws(SpoolError) {
        try retire(path(location, key), key: key, version: version)
        if location == .hold { try SystemCall.unlinkIfPresent(path(.hold, key) + ".reason") }
    }

    private func retire(_ source: String, key: ItemKey, version: ItemVersion) throws(SpoolError) {
        let target = try uniqueName(in: layout.done, base: "\(key.fileName).superseded-\(version)")
        try SystemCall.rename(source, layout.done + "/" + target)
    }

    /// A page of the transaction history, or a receipt upload, set aside
    /// (`setAside(drop:file:)`), becomes one drop per part: all written to
    /// tmp/ (with the drop's modification time `modifiedAt`, its
    /// receivedAt, when given), made durable by one syncfs(2) of the
    /// spool's file system, renamed into new/, new/ fsynced, and only then
    /// the drop removed from where it was set aside. One sync for all the
    /// parts, not an fsync each: a receipt of 5,000 purchases took 5,000
    /// fsyncs, seconds on a disk that flushes its cache for each. A crash in
    /// between leaves the drop aside and some parts: put back into new/ at
    /// start, its repeats are superseded. `parts` are the parts' bytes;
    /// `claim` is told each name in new/ just before a part is moved there,
    /// and `unclaim` a name it then did not get (a producer's file has it).
    func split(drop: AsideDrop, into parts: [[UInt8]], modifiedAt: Int64? = nil,
               claim: (String) -> Void = { _ in }, unclaim: (String) -> Void = { _ in }) throws(SpoolError) -> [String] {
        var temporaries: [String] = []
        temporaries.reserveCapacity(parts.count)
        // Any that are not yet in new/ go again if a step fails.
        defer { for temporary in temporaries { unlink(temporary) } }
        for part in parts {
            let temporary = TemporaryFile.split.path(in: layout, "\(getpid())-\(uniqueCounter.add(1, ordering: .relaxed).newValue)")
            try SystemCall.unlinkIfPresent(temporary)
            try SystemCall.writeNewFile(temporary, part, sync: false, modifiedAt: modifiedAt)
            temporaries.append(temporary)
        }
        try SystemCall.syncFileSystem(of: layout.tmp)
        var names: [String] = []
        names.reserveCapacity(parts.count)
        // Part names are the drop's name plus `.N`; a name near NAME_MAX
        // (255 bytes) is shortened first so that they still fit.
        let base = Spool.prefix(of: drop.name, maximumBytes: 200)
        for (index, temporary) in temporaries.enumerated() {
            names.append(try moveIntoInbox(temporary, base: "\(base).\(index + 1)", claim: claim, unclaim: unclaim))
            temporaries[index] = ""
        }
        temporaries = []
        try SystemCall.syncDirectory(layout.new)
        try SystemCall.unlinkIfPresent(drop.path)
        return names
    }

    // MARK: Queue

    /// queue/KEY (or, for a key whose first attempt this was, `inbox`: its
    /// file still in new/) -> done/KEY, replacing the older delivered
    /// snapshot there. No fsync: a
    /// move lost in a power cut only means the item is delivered again,
    /// which at-least-once allows. A file gone from new/ is finished already
    /// (taken away by hand).
    /// A queue/KEY.state stays; `retireState` moves it after.
    /// `followsDelivery`: whether done/ may hold an earlier delivery of KEY,
    /// whose failure record done/KEY.state is removed first, so that the
    /// record beside done/KEY is always this delivery's (or none).
    ///
    /// Where done/ cannot hold KEY, the item is linked into done/ and its old
    /// name then removed, rather than renamed: a cross-directory rename
    /// takes the file system's rename lock, and with several curl threads
    /// finishing at once (before the transport moved onto the engine's
    /// event loop, 2026-12-06) it cost 60-70 us of CPU here against 40-45 for the
    /// pair (bench/FINDINGS.md). A crash in between leaves both names of one
    /// file; `isDelivered` tells, and start-up removes the old one.
    func finish(_ key: ItemKey, followsDelivery: Bool = true, inbox: String? = nil) throws(SpoolError) {
        let (source, directory) = inbox.map { ($0, inboxDirectory) } ?? (key.fileName, queueDirectory)
        do {
            var replaces = followsDelivery
            if !followsDelivery, !linksRefused.load(ordering: .relaxed) {
                switch try SystemCall.link(source, in: directory, to: key.fileName, in: doneDirectory) {
                case .linked: return try SystemCall.unlinkIfPresent(source, in: directory)
                case .exists: replaces = true
                case .refused: linksRefused.store(true, ordering: .relaxed)
                }
            }
            if replaces { try SystemCall.unlinkIfPresent(key.fileName + ".state", in: doneDirectory) }
            try SystemCall.rename(source, in: directory, to: key.fileName, in: doneDirectory)
        } catch where inbox.map({ isGoneFromInbox($0, after: error) }) ?? false {
            return
        }
    }

    /// queue/KEY.state -> done/KEY.state, the failure record beside the
    /// delivered item, removed with it by DoneReaper. Call once KEY is finished and before anything else
    /// happens to it. A rename, not an unlink: on a file system mounted with
    /// `discard` an unlink waits for the device.
    func retireState(_ key: ItemKey) throws(SpoolError) {
        try SystemCall.renameIfPresent(path(.queue, key) + ".state", path(.done, key) + ".state")
    }

    /// queue/KEY (or new/`inbox`, see `finish`) -> hold/KEY with KEY.reason
    /// written first. `releaseWhen`: what must change before a release helps.
    func hold(_ key: ItemKey, reason: String, at now: Int64, attempts: Int, hasState: Bool = true,
              inbox: String? = nil, releaseWhen: String = "once the backend accepts it") throws(SpoolError) {
        let text = """
            \(LogText.singleLine(reason))
            held-at: \(Timestamp.rfc3339(milliseconds: now))
            attempts: \(attempts)
            to release: `txrecon show \(LogText.escaped(key.rawValue))` to inspect, then `txrecon release \(LogText.escaped(key.rawValue))` \(releaseWhen)

            """
        try SystemCall.replaceFile(path(.hold, key) + ".reason", Array(text.utf8),
                                   temporaryName: layout.hold + "/.tmp-" + key.fileName + ".reason", sync: false)
        try SystemCall.rename(inbox.map { layout.new + "/" + $0 } ?? path(.queue, key), path(.hold, key))
        // Held once renamed: a failure record left behind is only an old
        // schedule (a restart removes it beside no item; a new snapshot of
        // the key inherits it), while an error here would have the engine
        // think the key still queued and forget it when queue/KEY is gone.
        if hasState { try? SystemCall.unlinkIfPresent(path(.queue, key) + ".state") }
    }

    /// hold/KEY -> queue/KEY; false when KEY is not held. Never over a
    /// queue/KEY (EEXIST): only the daemon makes names in queue/, so a check
    /// suffices.
    func release(_ key: ItemKey) throws(SpoolError) -> Bool {
        guard try SystemCall.linkStatus(path(.hold, key)) != nil else { return false }
        guard try SystemCall.linkStatus(path(.queue, key)) == nil else {
            throw SpoolError("release into", path(.queue, key), EEXIST)
        }
        try SystemCall.rename(path(.hold, key), path(.queue, key))
        // Released once renamed; a reason left behind is removed at the next
        // start (restoreHold) or replaced by the next hold. An error here
        // would leave the engine thinking the key held while queue/KEY waits
        // unseen, and a later drop of the key placed over it.
        try? SystemCall.unlinkIfPresent(path(.hold, key) + ".reason")
        return true
    }

    /// Records a failed attempt in queue/KEY.state (write, then rename over),
    /// through a temporary name of its own: `.tmp-` + KEY alone would be a
    /// replay's staged copy of another key (`.tmp-replay-` + KEY2 for the
    /// key `replay-KEY2`), which another thread may be writing.
    func writeState(_ state: DeliveryState, for key: ItemKey) throws(SpoolError) {
        try SystemCall.replaceFile(path(.queue, key) + ".state", state.json.serialized,
                                   temporaryName: layout.queue + "/.tmp-state-" + key.fileName, sync: false)
    }

    /// The bytes of an item in a state directory; nil when it is not there.
    func read(_ location: SpoolLocation, _ key: ItemKey, maximumSize: Int) throws(SpoolError) -> [UInt8]? {
        do {
            return try SystemCall.readFile(path(location, key), limit: maximumSize)
        } catch where error.code == ENOENT {
            return nil
        }
    }

    /// The bytes of new/NAME, a key's file waiting for its first attempt;
    /// nil when it is not there.
    func readInbox(_ name: String, maximumSize: Int) throws(SpoolError) -> [UInt8]? {
        do {
            return try SystemCall.readFile(layout.new + "/" + name, limit: maximumSize)
        } catch where error.code == ENOENT {
            return nil
        }
    }

    /// The first line of hold/KEY.reason; nil when there is none.
    func holdReason(_ key: ItemKey) -> String? {
        guard let bytes = try? SystemCall.readFile(path(.hold, key) + ".reason", limit: 64 * 1024) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init)
    }

    // MARK: Start-up

    /// Everything in queue/, with its state. Leftovers of interrupted writes
    /// (.tmp-*) and states whose item is gone are removed; names that do not
    /// encode a key were not put there by txrecon and are left alone
    /// (returned in `foreign` for a warning). An item that is done/KEY under
    /// another name was delivered and its finish interrupted: its queue/
    /// name is removed and its failure record moved beside it (`delivered`).
    /// A failure record that is empty or does not parse is removed
    /// (`lostRecords`): left, the item would count as having none, and the
    /// record would outlive it.
    func restoreQueue() throws(SpoolError) -> RestoredQueue {
        let names = try SystemCall.listDirectory(layout.queue)
        let present = Set(names)
        var restored = RestoredQueue()
        for name in names {
            if name.hasPrefix(".tmp-") {
                try SystemCall.unlinkIfPresent(layout.queue + "/" + name)
            } else if name.hasSuffix(".state") {
                if !present.contains(String(name.dropLast(6))) {
                    try SystemCall.unlinkIfPresent(layout.queue + "/" + name)
                }
            } else if let key = ItemKey(fileName: name) {
                let info = (try? SystemCall.linkStatus(layout.queue + "/" + name)).flatMap { $0 }
                if let info, info.st_nlink > 1, isDelivered(key, sameFileAs: FileIdentity(info)) {
                    try SystemCall.unlinkIfPresent(layout.queue + "/" + name)
                    try retireState(key)
                    restored.delivered.append(key)
                    continue
                }
                var state: DeliveryState?
                if present.contains(name + ".state") {
                    let record = layout.queue + "/" + name + ".state"
                    state = (try? SystemCall.readFile(record, limit: 64 * 1024)).flatMap { DeliveryState(json: $0) }
                    if state == nil {
                        try SystemCall.unlinkIfPresent(record)
                        restored.lostRecords.append(key)
                    }
                }
                restored.items.append(QueuedFile(key: key, state: state,
                                                 receivedAt: info.map(Spool.modifiedMilliseconds) ?? 0))
            } else {
                restored.foreign.append(name)
            }
        }
        return restored
    }

    /// Adds every key delivered into done/ (a name without a dot: keys
    /// encode every byte but letters, digits, `-` and `_`) to `index`.
    func indexDelivered(into index: DoneIndex) throws(SpoolError) {
        let dot = UInt8(ascii: ".")
        try SystemCall.forEachName(in: layout.done) { name in
            if !name.isEmpty, !name.contains(dot) { index.add(name) }
        }
    }

    /// Keys in hold/; orphan reasons and temporaries are removed.
    func restoreHold() throws(SpoolError) -> [ItemKey] {
        let names = try SystemCall.listDirectory(layout.hold)
        let present = Set(names)
        var keys: [ItemKey] = []
        for name in names {
            if name.hasPrefix(".tmp-") || (name.hasSuffix(".reason") && !present.contains(String(name.dropLast(7)))) {
                try SystemCall.unlinkIfPresent(layout.hold + "/" + name)
            } else if !name.hasSuffix(".reason"), let key = ItemKey(fileName: name) {
                keys.append(key)
            }
        }
        return keys
    }

    /// Removes leftovers of interrupted writes in rejected/, and reasons
    /// whose rejected file is gone. Returns how many rejected inputs remain.
    func restoreRejected() throws(SpoolError) -> Int {
        let names = try SystemCall.listDirectory(layout.rejected)
        let present = Set(names)
        for name in names where name.hasPrefix(".tmp-")
            || (name.hasSuffix(".reason") && !present.contains(String(name.dropLast(7)))) {
            try SystemCall.unlinkIfPresent(layout.rejected + "/" + name)
        }
        return try rejectedNames().count
    }

    // MARK: Names

    /// The longest prefix of `name` of at most `maximumBytes` UTF-8 bytes
    /// that ends on a Unicode scalar boundary; empty only when `maximumBytes`
    /// is below 4.
    static func prefix(of name: String, maximumBytes: Int) -> String {
        guard name.utf8.count > maximumBytes else { return name }
        // By Unicode scalars, not characters: one character of a letter and
        // a hundred combining marks would leave nothing (a name starting
        // with a dot, hidden and refused by requeue-rejected).
        var result = String.UnicodeScalarView()
        var bytes = 0
        for scalar in name.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > maximumBytes { break }
            result.append(scalar)
        }
        return String(result)
    }

    /// Renames `source` into new/ as `base` or, when a producer already uses
    /// that name, `base.N`: never over a producer's file. `claim` is told
    /// each name before the rename onto it, and `unclaim` each it did not
    /// get, which is then a producer's file whose event intake must take.
    @discardableResult
    func moveIntoInbox(_ source: String, base: String, claim: (String) -> Void = { _ in },
                       unclaim: (String) -> Void = { _ in }) throws(SpoolError) -> String {
        var candidate = base
        while true {
            claim(candidate)
            let moved: Bool
            do {
                moved = try SystemCall.renameNoReplace(source, layout.new + "/" + candidate)
            } catch {
                unclaim(candidate)
                throw error
            }
            if moved { return candidate }
            unclaim(candidate)
            candidate = "\(base).\(uniqueCounter.add(1, ordering: .relaxed).newValue)"
        }
    }

    private func isTaken(_ path: String) throws(SpoolError) -> Bool {
        if try SystemCall.linkStatus(path) != nil { return true }
        return try SystemCall.linkStatus(path + ".reason") != nil
    }

    /// `base`, or `base.N` with a fresh N: the first name not taken in `directory`
    /// (a name ending in .reason is never used, it would look like a reason).
    private func uniqueName(in directory: String, base: String) throws(SpoolError) -> String {
        var candidate = base.hasSuffix(".reason") ? base + ".input" : base
        while try isTaken(directory + "/" + candidate) {
            candidate = "\(base).\(uniqueCounter.add(1, ordering: .relaxed).newValue)"
        }
        return candidate
    }
}
