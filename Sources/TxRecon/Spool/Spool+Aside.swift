// Spool+Aside: a drop intake splits (a history page, a receipt upload) is
// first taken out of new/ to a name no producer can reach, so that removing
// it once its parts are in new/ can never remove another file a producer
// gave the same name meanwhile (new/ is theirs to write, 2770 without a
// sticky bit: a rename over NAME replaces whatever NAME was).
//
//   new/NAME -> receipts/.split-N-NAME     setAside: the file intake
//                                          examined, or back into new/
//   receipts/.split-N-NAME -> (unlinked)   split, once its parts are in new/
//   receipts/.split-N-NAME -> rejected/…   rejectAside (no destination takes it)
//   receipts/.split-N-NAME -> new/NAME     putBack: a split that will not run
//                                          (restoreAsideDrops at start)
//
// receipts/ because only the daemon writes it and it is on the spool's file
// system; ReceiptReaper and ReceiptStore leave these names alone.
// Reports: throws SpoolError; logs nothing.
import Glibc

/// A drop set aside for its split: `name` is its name in new/, `path` where
/// it is now.
struct AsideDrop: Sendable, Equatable {
    var name: String
    var path: String
}

extension Spool {
    /// The prefix of a drop set aside in receipts/.
    static let asideDropPrefix = ".split-"

    /// new/NAME -> receipts/.split-N-NAME, if NAME still holds `file`, the
    /// file intake examined. nil when NAME is gone, or holds another file
    /// now (a producer renamed one over it since): that one is put back
    /// into new/ (as NAME, or NAME.N should NAME be taken again), where
    /// intake reads it like any other drop.
    func setAside(drop name: String, file: WrittenFile) throws(SpoolError) -> AsideDrop? {
        let base = Spool.prefix(of: name, maximumBytes: 200)
        let aside = AsideDrop(name: name, path: layout.receipts + "/" + Spool.asideDropPrefix
                              + "\(getpid())-\(uniqueNumber())-" + base)
        do {
            try SystemCall.rename(layout.new + "/" + name, aside.path)
        } catch where error.code == ENOENT && SystemCall.isMissing(layout.new + "/" + name) {
            return nil
        }
        guard let info = try SystemCall.linkStatus(aside.path), WrittenFile(info) == file else {
            try putBack(aside)
            return nil
        }
        return aside
    }

    /// receipts/.split-…-NAME -> new/NAME (or NAME.N): intake reads it again.
    func putBack(_ drop: AsideDrop) throws(SpoolError) {
        try moveIntoInbox(drop.path, base: Spool.prefix(of: drop.name, maximumBytes: 200))
    }

    /// A drop set aside that no destination takes: to rejected/ with its
    /// reason, as `reject(drop:because:at:)` would from new/.
    @discardableResult
    func rejectAside(_ drop: AsideDrop, because rejection: Rejection, at now: Int64) throws(SpoolError) -> String {
        let base = Spool.prefix(of: drop.name.hasPrefix(".") ? "_" + drop.name : drop.name, maximumBytes: 200)
        return try moveToRejected(drop.path, base: base, file: drop.name, because: rejection, at: now)
    }

    /// Puts every drop a stopped or crashed daemon left aside back into
    /// new/, where this one splits it again (its parts already in new/ are
    /// repeats, superseded). Call once at start, before intake. Returns how
    /// many were put back.
    func restoreAsideDrops() throws(SpoolError) -> Int {
        var restored = 0
        for name in try SystemCall.listDirectory(layout.receipts) where name.hasPrefix(Spool.asideDropPrefix) {
            // .split-PID-N-NAME
            let fields = name.dropFirst(Spool.asideDropPrefix.count).split(separator: "-", maxSplits: 2,
                                                                           omittingEmptySubsequences: false)
            let original = fields.count == 3 && !fields[2].isEmpty ? String(fields[2]) : "split-drop"
            try putBack(AsideDrop(name: original, path: layout.receipts + "/" + name))
            restored += 1
        }
        return restored
    }
}
