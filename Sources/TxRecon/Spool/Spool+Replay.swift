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
    /// The file of done/KEY the staged copy was made of (`stageReplay`);
    /// nil before. A key delivered again since then has a newer file there.
    var copiedFrom: WrittenFile? = nil
}

extension Spool {
    /// The delivered snapshots a replay asks for: those of `keys` (every
    /// one in done/ when nil) received at or after `since` and before
    /// `until`, oldest first; the named keys done/ holds none of; and the
    /// named keys whose snapshot the window leaves out (each is answered,
    /// as a named key always is, never passed over in silence).
    func deliveredSnapshots(of keys: [ItemKey]?, since: Int64?, until: Int64?) throws(SpoolError)
        -> (found: [DeliveredSnapshot], missing: [ItemKey], outside: [DeliveredSnapshot]) {
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
        var outside: [DeliveredSnapshot] = []
        for key in candidates {
            guard let info = try SystemCall.linkStatus(layout.done + "/" + key.fileName),
                  info.st_mode & S_IFMT == S_IFREG else {
                missing.append(key)
                continue
            }
            let snapshot = DeliveredSnapshot(key: key, receivedAt: Spool.modifiedMilliseconds(info))
            if let since, snapshot.receivedAt < since {
                if keys != nil { outside.append(snapshot) }
                continue
            }
            if let until, snapshot.receivedAt >= until {
                if keys != nil { outside.append(snapshot) }
                continue
            }
            found.append(snapshot)
        }
        found.sort { $0.receivedAt != $1.receivedAt ? $0.receivedAt < $1.receivedAt : $0.key < $1.key }
        return (found, missing, outside)
    }

    /// Copies done/KEY to a temporary name in queue/, keeping its mtime
    /// (the producer's write time, which the item's `receivedAt` is), and
    /// fsyncs it, so a crash never leaves an empty item in queue/. Run by
    /// intake, off the engine's thread: the fsync is the slow part. The
    /// engine then commits the copy (`commitReplay`) or discards it.
    /// Returns the snapshot with the file it was copied from. A file larger
    /// than `maximumSize` (MaxFileSize=) is not read (EFBIG): intake took
    /// none so large, and an attempt would only hold the copy.
    func stageReplay(_ snapshot: DeliveredSnapshot, maximumSize: Int) throws(SpoolError) -> DeliveredSnapshot {
        let key = snapshot.key
        let source = layout.done + "/" + key.fileName
        guard let info = try SystemCall.linkStatus(source) else { throw SpoolError("open", source, ENOENT) }
        let bytes = try SystemCall.readFile(source, limit: maximumSize)
        let staged = stagedReplay(key)
        try SystemCall.unlinkIfPresent(staged)
        try SystemCall.writeNewFile(staged, bytes, sync: true)
        var times = [info.st_atim, info.st_mtim]
        guard utimensat(AT_FDCWD, staged, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = SpoolError("utimensat", staged)
            unlink(staged)
            throw error
        }
        var copied = snapshot
        copied.copiedFrom = WrittenFile(info)
        return copied
    }

    /// What became of done/KEY since `snapshot`'s copy was made of it.
    enum StagedSourceFate: Equatable {
        case unchanged
        /// Delivered again: the copy is older than what the destination has
        /// and must not go out after it.
        case replaced
        /// Removed (DoneRetention=), or the snapshot was never staged.
        case gone
    }

    func fate(ofStaged snapshot: DeliveredSnapshot) -> StagedSourceFate {
        guard let copiedFrom = snapshot.copiedFrom,
              let info = try? SystemCall.linkStatus(layout.done + "/" + snapshot.key.fileName) else { return .gone }
        return WrittenFile(info) == copiedFrom ? .unchanged : .replaced
    }

    /// Gives a staged copy its name queue/KEY, which must not exist: one
    /// link and one unlink on the engine's thread. queue/ itself is synced
    /// by `syncQueue`, once per batch: a crash before that may lose the
    /// copy (a `.tmp-` name the next start removes, or the new name), never
    /// the delivered snapshot, and the replay can be asked for again.
    func commitReplay(_ key: ItemKey) throws(SpoolError) {
        let staged = stagedReplay(key)
        let renamed: Bool
        do {
            renamed = try SystemCall.renameNoReplace(staged, layout.queue + "/" + key.fileName)
        } catch {
            unlink(staged)
            throw error
        }
        guard renamed else {
            unlink(staged)
            throw SpoolError("rename", layout.queue + "/" + key.fileName, EEXIST)
        }
    }

    /// Removes a staged copy the engine did not take.
    func discardReplay(_ key: ItemKey) {
        unlink(stagedReplay(key))
    }

    private func stagedReplay(_ key: ItemKey) -> String {
        layout.queue + "/.tmp-replay-" + key.fileName
    }

    /// Makes the names `commitReplay` gave queue/ durable.
    func syncQueue() throws(SpoolError) {
        try SystemCall.syncDirectory(layout.queue)
    }
}
