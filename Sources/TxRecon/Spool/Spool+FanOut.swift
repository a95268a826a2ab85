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
// (`fanOutCopies`) and links again (an existing copy of the same file
// counts), never as a producer's hard link.
import Glibc

extension Spool {
    /// Gives new/NAME a name in each of `inboxes` (destinations' new/):
    /// NAME, or NAME.N when NAME there is another file (a producer reused
    /// the name before that destination took the first one). Returns the
    /// name in each.
    func fanOut(drop name: String, into inboxes: [String]) throws(SpoolError) -> [String] {
        let source = layout.new + "/" + name
        guard let info = try SystemCall.linkStatus(source) else {
            throw SpoolError("lstat", source, ENOENT)
        }
        let file = FileIdentity(info)
        var names: [String] = []
        for inbox in inboxes {
            var candidate = inbox + "/" + name
            var suffix = 0
            while true {
                switch try SystemCall.link(source, candidate) {
                case .linked:
                    break
                case .exists:
                    if let existing = try SystemCall.linkStatus(candidate), FileIdentity(existing) == file { break }
                    suffix += 1
                    candidate = inbox + "/" + name + ".\(suffix)"
                    continue
                case .refused:
                    try copy(source, info: info, to: candidate)
                }
                break
            }
            names.append(String(candidate.dropFirst(inbox.count + 1)))
        }
        return names
    }

    /// This spool, recognising the copies in `inboxes` as intake's own.
    func withFanOutInboxes(_ inboxes: [String]) -> Spool {
        inboxes.isEmpty ? self : Spool(layout: layout, keepsDone: keepsDone, fanOutInboxes: inboxes)
    }

    /// Names left in a destination's inbox, for intake to hand to its
    /// engine again (start-up, or a copy its engine could not take).
    func copies() throws(SpoolError) -> [String] {
        try SystemCall.listDirectory(layout.new).filter { !$0.hasPrefix(".") && !$0.hasSuffix(".tmp-copy") }
    }

    /// Moves what a destination's inbox holds back into `inbox` (new/),
    /// under a name not taken there: the primary destination's copies after
    /// its further destinations were removed, taken again by intake.
    func returnCopies(to inbox: String) throws(SpoolError) -> Int {
        var moved = 0
        for name in try copies() {
            var candidate = name
            var suffix = 0
            while !(try SystemCall.renameNoReplace(layout.new + "/" + name, inbox + "/" + candidate)) {
                suffix += 1
                candidate = name + ".\(suffix)"
            }
            moved += 1
        }
        return moved
    }

    /// A copy of the drop where it cannot be linked, fsynced and with the
    /// drop's modification time (its receivedAt) before it gets its name.
    private func copy(_ source: String, info: stat, to target: String) throws(SpoolError) {
        let bytes = try SystemCall.readFile(source, limit: Int(info.st_size) + 1)
        let temporary = target + ".tmp-copy"
        try SystemCall.unlinkIfPresent(temporary)
        try SystemCall.writeNewFile(temporary, bytes, mode: 0o640, sync: true)
        var times = [info.st_atim, info.st_mtim]
        guard utimensat(AT_FDCWD, temporary, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = SpoolError("utimensat", temporary)
            unlink(temporary)
            throw error
        }
        try SystemCall.rename(temporary, target)
    }

    /// Makes the copies in `inboxes` durable, then removes `names` from
    /// new/ and makes that durable: from then on each destination owns its
    /// copy.
    func completeFanOut(of names: [String], into inboxes: [String]) throws(SpoolError) {
        for inbox in inboxes { try SystemCall.syncDirectory(inbox) }
        for name in names { try SystemCall.unlinkIfPresent(layout.new + "/" + name) }
        try SystemCall.syncDirectory(layout.new)
    }

    /// How many of the drop new/NAME's other names are its copies in
    /// `inboxes`, left by a fan-out a crash interrupted.
    func fanOutCopies(of name: String, file: FileIdentity) -> Int {
        fanOutInboxes.count { inbox in
            guard let info = try? SystemCall.linkStatus(inbox + "/" + name) else { return false }
            return FileIdentity(info) == file
        }
    }

    /// Whether new/NAME is the same file as `destination`'s copy NAME.
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
        return (try SystemCall.readFile(path, limit: maximumSize), Spool.modifiedMilliseconds(info))
    }
}
