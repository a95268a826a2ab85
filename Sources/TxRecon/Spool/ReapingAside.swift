// ReapingAside: the step both reapers (DoneReaper for done/, ReceiptReaper
// for receipts/) take before removing a file. The file is renamed to
// `.reaping-NAME`, hidden from every reader that skips dotted names, then
// either unlinked or put back under its name. A writer that stores a fresh
// file under NAME meanwhile is never undone: putting back never replaces
// (the one aside, older or the same bytes, then goes). Reports a warning
// when a rename fails for another reason than the file being gone.
import Glibc

struct ReapingAside: Sendable {
    /// Before the name of a file set aside.
    static let prefix = ".reaping-"

    /// The directory, and how messages name it (`done`, `receipts`).
    let directory: String
    let label: String
    let log: any LogSink

    /// Where NAME is while it is aside.
    func path(of name: String) -> String { directory + "/" + Self.prefix + name }

    /// Renames NAME aside; false when it cannot (gone already: silently).
    func setAside(_ name: String) -> Bool {
        let path = directory + "/" + name
        guard rename(path, self.path(of: name)) == 0 else {
            if errno != ENOENT {
                log.write(LogEntry(.warning, "cannot remove \(label)/\(LogText.escaped(name)): "
                                   + "\(SpoolError("rename", path))"))
            }
            return false
        }
        return true
    }

    /// Puts NAME back, unless its name was taken meanwhile (then the one
    /// aside goes); `takenBy` says what may have used it meanwhile, for the
    /// warning when it cannot be put back.
    func putBack(_ name: String, takenBy: String) {
        let aside = path(of: name)
        do {
            if try !SystemCall.renameNoReplace(aside, directory + "/" + name) { unlink(aside) }
        } catch {
            log.write(LogEntry(.warning, "\(label)/\(LogText.escaped(name)), \(takenBy) while it was being removed, "
                               + "is at \(label)/\(Self.prefix)\(LogText.escaped(name)) and could not be put back "
                               + "(\(error)); the next scan tries again"))
        }
    }

    /// The name a file aside was set aside under; nil for another dotted name.
    static func name(ofAside asideName: String) -> String? {
        asideName.hasPrefix(prefix) ? String(asideName.dropFirst(prefix.count)) : nil
    }
}
