// Spool+FanOut: how one drop reaches several destinations. With further
// destinations configured, intake gives each verified drop a name in the
// inbox of every destination it matches (destinations/NAME/new/), then
// removes it from new/; each destination's engine takes it from its own
// inbox by the same moves as ever (accept, finish, hold, supersede), so one
// destination's progress is its own directories and a restart re-sends only
// to the destinations that still have the item.
//
//   new/NAME -> destinations/D/new/NAME  (link; a copy, fsynced, where
//                                         hard links are refused)
//   fsync(destinations/D/new) for each D, then unlink new/NAME, fsync(new/)
//
// Only then does any engine see its copy. So while new/NAME exists, its
// other names are all destinations/D/new/NAME, untouched: a crash in between
// leaves new/NAME with those names, which intake recognises as its own
// (`fanOutCopies`) and links again (a name there that is the same file, or
// a copy with the same bytes, counts), never as a producer's hard link.
// A copy is always named NAME, so that this holds: when D's inbox still has
// an earlier drop's NAME (a producer reused the name before D took it), the
// drop waits in new/ until D has taken the earlier one.
import Glibc

extension Spool {
    /// Gives new/NAME the name NAME in each of `inboxes` (destinations'
    /// new/). Throws EEXIST when an inbox holds another file under NAME
    /// (the drop then waits in new/; see the header), and EFBIG when the
    /// drop grew beyond `maximumSize` (MaxFileSize=) since it was examined
    /// and must be copied (the next scan examines it again and refuses it).
    /// Returns the drop's identity, for `completeFanOut`.
    func fanOut(drop name: String, into inboxes: [String], maximumSize: Int) throws(SpoolError) -> FileIdentity {
        let source = layout.new + "/" + name
        guard let info = try SystemCall.linkStatus(source) else {
            throw SpoolError("lstat", source, ENOENT)
        }
        let file = FileIdentity(info)
        for inbox in inboxes {
            let target = inbox + "/" + name
            switch try SystemCall.link(source, target) {
            case .linked:
                continue
            case .refused:
                if try copy(source, info: info, to: target, maximumSize: maximumSize) { continue }
            case .exists:
                break
            }
            guard try isCopy(target, of: source, file: file) else {
                throw SpoolError("link to \(target) (an earlier drop of that name waits there) from", source, EEXIST)
            }
        }
        return file
    }

    /// Whether `target` is the drop's copy: the same file, or one with the
    /// same bytes (made where links are refused).
    private func isCopy(_ target: String, of source: String, file: FileIdentity) throws(SpoolError) -> Bool {
        guard let existing = try SystemCall.linkStatus(target) else { return false }
        if FileIdentity(existing) == file { return true }
        let limit = Int(existing.st_size) + 1
        return try SystemCall.readFile(target, limit: limit) == SystemCall.readFile(source, limit: limit)
    }

    /// This spool, recognising the copies in `inboxes` as intake's own.
    func withFanOutInboxes(_ inboxes: [String]) -> Spool {
        inboxes.isEmpty ? self : Spool(layout: layout, fanOutInboxes: inboxes)
    }

    /// Names left in a destination's inbox, for intake to hand to its
    /// engine again (start-up, or a copy its engine could not take).
    func copies() throws(SpoolError) -> [String] {
        try SystemCall.listDirectory(layout.new)
    }

    /// Moves what this destination's inbox holds back into `inbox` (new/),
    /// under a name not taken there, each a file of its own: `[Backend]`'s
    /// copies after its further destinations were removed, taken again by
    /// intake as drops. A copy that still shares its inode with other
    /// destinations' names is copied (a drop with other names would be
    /// refused as hard-linked); one that is new/NAME itself loses only its
    /// name here. Returns how many went back.
    func returnCopies(to inbox: String) throws(SpoolError) -> Int {
        var moved = 0
        for name in try copies() {
            let path = layout.new + "/" + name
            guard let info = try SystemCall.linkStatus(path) else { continue }
            if let drop = try SystemCall.linkStatus(inbox + "/" + name), FileIdentity(drop) == FileIdentity(info) {
                try SystemCall.unlinkIfPresent(path)
                continue
            }
            let source: String
            if info.st_nlink > 1 {
                source = TemporaryFile.returned.path(in: layout, "\(getpid())-\(uniqueNumber())")
                try SystemCall.unlinkIfPresent(source)
                guard try copy(path, info: info, to: source, maximumSize: Int(info.st_size)) else { continue }
            } else {
                source = path
            }
            var candidate = name
            var suffix = 0
            while !(try SystemCall.renameNoReplace(source, inbox + "/" + candidate)) {
                suffix += 1
                candidate = name + ".\(suffix)"
            }
            try SystemCall.unlinkIfPresent(path)
            moved += 1
        }
        try SystemCall.syncDirectory(inbox)
        return moved
    }

    /// A copy of `source` at `target` where it cannot be linked: written
    /// under a temporary name in tmp/, fsynced, with the drop's modification
    /// time (its receivedAt), then renamed. False when `target` exists.
    /// Reads at most `maximumSize` bytes (EFBIG beyond): the producer owns
    /// the file and may have grown it (a sparse 50 GiB) since it was checked.
    /// internal for testing
    func copy(_ source: String, info: stat, to target: String, maximumSize: Int) throws(SpoolError) -> Bool {
        let bytes = try SystemCall.readFile(source, limit: maximumSize)
        let temporary = TemporaryFile.copy.path(in: layout, "\(getpid())-\(uniqueNumber())")
        try SystemCall.writeNewFile(temporary, bytes, mode: 0o640, sync: true)
        var times = [info.st_atim, info.st_mtim]
        guard utimensat(AT_FDCWD, temporary, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = SpoolError("utimensat", temporary)
            unlink(temporary)
            throw error
        }
        let placed: Bool
        do {
            placed = try SystemCall.renameNoReplace(temporary, target)
        } catch {
            unlink(temporary)
            throw error
        }
        if !placed { unlink(temporary) }
        return placed
    }

    /// Makes the copies in `inboxes` durable, then removes each drop from
    /// new/ (only while its name is still that file: a producer may have
    /// renamed a new drop onto it meanwhile) and makes that durable: from
    /// then on each destination owns its copy.
    func completeFanOut(of drops: [(name: String, file: FileIdentity)], into inboxes: [String]) throws(SpoolError) {
        for inbox in inboxes { try SystemCall.syncDirectory(inbox) }
        for (name, file) in drops {
            let path = layout.new + "/" + name
            guard let info = try SystemCall.linkStatus(path), FileIdentity(info) == file else { continue }
            try SystemCall.unlinkIfPresent(path)
        }
        try SystemCall.syncDirectory(layout.new)
    }

    /// How many of the drop new/NAME's other names are its copies in
    /// `fanOutInboxes`, left by a fan-out a crash interrupted.
    func fanOutCopies(of name: String, file: FileIdentity) -> Int {
        fanOutInboxes.count { inbox in
            guard let info = try? SystemCall.linkStatus(inbox + "/" + name) else { return false }
            return FileIdentity(info) == file
        }
    }

    /// Whether new/NAME is the same file as `destination`'s copy NAME: a
    /// fan-out not completed yet, whose copy its engine must not see.
    func isInInbox(_ name: String, sameFileAs destination: Spool) -> Bool {
        guard let drop = try? SystemCall.linkStatus(layout.new + "/" + name),
              let copy = try? SystemCall.linkStatus(destination.layout.new + "/" + name) else { return false }
        return FileIdentity(drop) == FileIdentity(copy)
    }

    /// Reads a copy in this destination's inbox, which only the daemon
    /// writes: its bytes and receivedAt; nil when it is gone.
    func readCopy(_ name: String, maximumSize: Int) throws(SpoolError) -> (bytes: [UInt8], receivedAt: Int64)? {
        let path = layout.new + "/" + name
        guard let info = try SystemCall.linkStatus(path), info.st_mode & S_IFMT == S_IFREG else { return nil }
        do {
            return (try SystemCall.readFile(path, limit: maximumSize), Spool.modifiedMilliseconds(info))
        } catch where error.code == ENOENT {
            return nil
        }
    }
}
