// ReceiptStore: receipts/, where the daemon keeps each StoreKit 1 receipt
// it split (verified, unless Mode=none), once, under the SHA-256 of its
// bytes (64 lowercase hex digits). The parts of a receipt upload name it (`receiptSha256`)
// instead of carrying it, so an upload of N purchases costs its receipt's
// size once, and identical uploads (an app sending its receipt again)
// share one file.
//
//   receipts/.tmp-…  -> receipts/HEX           store: written, fsynced,
//                                              renamed, receipts/ fsynced,
//                                              all before any part names it
//   receipts/HEX (mtime now)                   store of an identical receipt
//                                              (its bytes compared: a damaged
//                                              file is written afresh), or an
//                                              item of it delivered
//   receipts/HEX -> receipts/.reaping-HEX      ReceiptReaper, once nothing
//                                              names it (its removal); read
//                                              there meanwhile
//
// Only the daemon writes here (mode 0640 files in a 0750 directory, its
// temporaries too: tmp/ is the producers'), and it stores only receipts a
// receipt upload held (verified, unless Mode=none): a part can only ever
// name a receipt an upload carried, whoever wrote the part. The
// modification time of each file is its last use, which ReceiptReaper's
// retention counts from. `restoreAtStart` tidies what a crash left.
// Reports: throws SpoolError; logs nothing.
import Glibc
import Synchronization

package final class ReceiptStore: Sendable {
    let layout: SpoolLayout
    /// Called after each store: the reaper arms its timer (none while
    /// receipts/ is empty: no timers while idle).
    private let stored: @Sendable () -> Void
    private let counter = Atomic<Int>(0)
    /// The largest receipt read, MaxFileSize= (a stored receipt was smaller
    /// than its upload), so that a file grown in receipts/ cannot make a
    /// reader allocate more than a drop could.
    private let readLimit: Atomic<Int>

    package init(layout: SpoolLayout, readLimit: Int = SpoolSettings().maxFileSize,
                 stored: @escaping @Sendable () -> Void = {}) {
        self.layout = layout
        self.readLimit = Atomic(readLimit)
        self.stored = stored
    }

    /// MaxFileSize= changed (a reload).
    func limitReads(to bytes: Int) { readLimit.store(bytes, ordering: .relaxed) }

    /// The largest receipt read now, MaxFileSize=.
    var largestRead: Int { readLimit.load(ordering: .relaxed) }

    /// Where a receipt being written waits for its rename: receipts/ itself,
    /// which only the daemon writes (a producer could replace a temporary in
    /// tmp/ between its fsync and its rename).
    static let temporaryPrefix = ".tmp-"

    /// The name a receipt is stored under: the SHA-256 of `der`, in
    /// lowercase hex, as the parts and the delivery body spell it.
    static func name(of der: [UInt8]) -> String {
        SHA256Digest.hex(der)
    }

    func path(_ name: String) -> String { layout.receipts + "/" + name }

    /// Makes `der` durable as receipts/`name` (its `name(of:)`) before the
    /// caller writes anything that names it. A file already there holding
    /// the same bytes is only touched, its last use now; one that does not
    /// (damaged, or cut short by a crash before this release wrote
    /// temporaries) is replaced, as a rejection for a damaged receipt
    /// promises. Either way receipts/ is fsynced, so the name is durable
    /// even when an earlier store's fsync failed.
    func store(_ der: [UInt8], name: String) throws(SpoolError) {
        let target = path(name)
        var present = false
        if let info = try SystemCall.linkStatus(target), info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) == der.count,
           (try? SystemCall.readFile(target, limit: der.count)) == der {
            // Gone between the look and the touch (the reaper took it): written afresh.
            present = try SystemCall.touch(target)
        }
        if !present {
            let temporary = layout.receipts + "/" + Self.temporaryPrefix
                + "\(getpid())-\(counter.add(1, ordering: .relaxed).newValue)"
            try SystemCall.unlinkIfPresent(temporary)
            try SystemCall.writeNewFile(temporary, der, mode: 0o640, sync: true)
            do {
                try SystemCall.rename(temporary, target)
            } catch {
                unlink(temporary)
                throw error
            }
        }
        try SystemCall.syncDirectory(layout.receipts)
        stored()
    }

    /// The bytes of receipts/`name`, or of receipts/.reaping-`name` while
    /// ReceiptReaper has it aside (it is put back if anything names it);
    /// nil when neither is there.
    func read(_ name: String) throws(SpoolError) -> [UInt8]? {
        let limit = readLimit.load(ordering: .relaxed)
        for candidate in [path(name), layout.receipts + "/" + ReceiptStore.asidePrefix + name] {
            do {
                return try SystemCall.readFile(candidate, limit: limit)
            } catch where error.code == ENOENT {
                continue
            }
        }
        return nil
    }

    /// Where ReceiptReaper puts a receipt for the moment of its removal.
    static let asidePrefix = ReapingAside.prefix

    /// Tidies what a crash left in receipts/, before any engine, intake or
    /// the ledger's catch-up reads it: a temporary of an unfinished store is
    /// removed (nothing named it yet), and a receipt ReceiptReaper had aside
    /// is put back (or, stored afresh since, the copy aside goes). Call once
    /// at start, under the spool's lock. Returns how many were put back.
    func restoreAtStart() throws(SpoolError) -> Int {
        var restored = 0
        for name in try SystemCall.listDirectory(layout.receipts) {
            let path = layout.receipts + "/" + name
            if name.hasPrefix(Self.temporaryPrefix) {
                try SystemCall.unlinkIfPresent(path)
            } else if name.hasPrefix(Self.asidePrefix), ReceiptPart.isReceiptName(name.dropFirst(Self.asidePrefix.count)) {
                if try SystemCall.renameNoReplace(path, self.path(String(name.dropFirst(Self.asidePrefix.count)))) {
                    restored += 1
                } else {
                    try SystemCall.unlinkIfPresent(path)
                }
            }
        }
        return restored
    }

    /// An item naming receipts/`name` was delivered (or is replayed): its
    /// last use is now, so the receipt stays as long as done/ keeps that
    /// item. Returns whether the receipt is stored.
    @discardableResult
    func noteUse(_ name: String) -> Bool {
        guard ReceiptPart.isReceiptName(name) else { return false }
        // An error reads as "not stored": a receipt removed meanwhile leaves
        // its delivered items readable as the lowest version, which only
        // delivers too much.
        return (try? SystemCall.touch(path(name))) ?? false
    }
}
