// Spool+Replay: what `txrecon replay` sends again: the delivered snapshots
// still in done/ (as far back as DoneRetention=), and their copy back into
// queue/. A copy, not a link: the attempt that delivers it renames it onto
// done/KEY again, and a rename onto the same inode would leave queue/KEY.
import Glibc

/// A delivered snapshot in done/ (not a superseded one, not a failure record).
struct DeliveredSnapshot: Sendable, Equatable {
    var key: ItemKey
    /// Its producer's write time (the file's mtime), ms since 1970.
    var receivedAt: Int64
}

extension Spool {
    /// The delivered snapshots a replay asks for: those of `keys` (every
    /// one in done/ when nil) received at or after `since` and before
    /// `until`, oldest first; and the named keys done/ holds none of.
    func deliveredSnapshots(of keys: [ItemKey]?, since: Int64?,
                            until: Int64?) throws(SpoolError) -> (found: [DeliveredSnapshot], missing: [ItemKey]) {
        // Item names hold no dot; `KEY.state` and `KEY.superseded-…` do.
        let candidates: [ItemKey]
        if let keys {
            candidates = keys
        } else {
            candidates = try SystemCall.listDirectory(layout.done).compactMap { name in
                name.contains(".") ? nil : ItemKey(fileName: name)
            }
        }
        var found: [DeliveredSnapshot] = []
        var missing: [ItemKey] = []
        for key in candidates {
            guard let info = try SystemCall.linkStatus(layout.done + "/" + key.fileName),
                  info.st_mode & S_IFMT == S_IFREG else {
                missing.append(key)
                continue
            }
            let receivedAt = Spool.modifiedMilliseconds(info)
            if let since, receivedAt < since { continue }
            if let until, receivedAt >= until { continue }
            found.append(DeliveredSnapshot(key: key, receivedAt: receivedAt))
        }
        found.sort { $0.receivedAt != $1.receivedAt ? $0.receivedAt < $1.receivedAt : $0.key < $1.key }
        return (found, missing)
    }

    /// Copies done/KEY into queue/KEY, which must not exist, keeping its
    /// mtime (the producer's write time, which the item's `receivedAt` is).
    /// The file is fsynced (a crash never leaves an empty item in queue/);
    /// queue/ itself is synced by `syncQueue`, once per batch: a crash
    /// before that may lose the copy, never the delivered snapshot, and the
    /// replay can be asked for again.
    func requeueDelivered(_ key: ItemKey) throws(SpoolError) {
        let source = layout.done + "/" + key.fileName
        guard let info = try SystemCall.linkStatus(source) else { throw SpoolError("open", source, ENOENT) }
        let bytes = try SystemCall.readFile(source, limit: 1 << 30)
        let temporary = layout.queue + "/.tmp-replay-" + key.fileName
        let target = layout.queue + "/" + key.fileName
        try SystemCall.unlinkIfPresent(temporary)
        try SystemCall.writeNewFile(temporary, bytes, sync: true)
        var times = [info.st_atim, info.st_mtim]
        guard utimensat(AT_FDCWD, temporary, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = SpoolError("utimensat", temporary)
            unlink(temporary)
            throw error
        }
        let renamed: Bool
        do {
            renamed = try SystemCall.renameNoReplace(temporary, target)
        } catch {
            unlink(temporary)
            throw error
        }
        guard renamed else {
            unlink(temporary)
            throw SpoolError("rename", target, EEXIST)
        }
    }

    /// Makes the names `requeueDelivered` gave queue/ durable.
    func syncQueue() throws(SpoolError) {
        try SystemCall.syncDirectory(layout.queue)
    }
}
