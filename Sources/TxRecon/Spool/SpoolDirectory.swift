// SpoolDirectory: a directory the spool's system calls name files relative
// to, held open as a descriptor (O_PATH) for the *at(2) calls.
//
// The daemon moves every item by name several times, and with absolute
// names the kernel walks the whole path (/var/spool/txrecon/new/NAME) at
// each call, and the daemon builds that path first; relative to new/,
// queue/ or done/ held open the name is the item's own and the kernel
// looks up one component. Postfix gets the same by changing into its queue
// directory, which a library that serves several spools in one process
// cannot do.
import CGlibcExtras
import Glibc

/// An open directory, or the working directory (names as given).
final class SpoolDirectory: Sendable {
    /// What the *at(2) calls take: the directory's descriptor, or AT_FDCWD.
    let descriptor: Int32
    /// The directory's path, with a slash, for messages and for names when
    /// the directory could not be opened; empty for the working directory.
    private let prefix: String

    /// Names are taken as they are (absolute paths, as elsewhere).
    static let workingDirectory = SpoolDirectory(descriptor: AT_FDCWD, prefix: "")

    private init(descriptor: Int32, prefix: String) {
        self.descriptor = descriptor
        self.prefix = prefix
    }

    /// `path` opened as a directory. When it cannot be (it does not exist
    /// yet), names are given with the path in front (`argument`), and
    /// nothing but speed differs.
    static func open(_ path: String) -> SpoolDirectory {
        let descriptor = Glibc.open(path, TXR_O_PATH | O_DIRECTORY | O_CLOEXEC)
        return SpoolDirectory(descriptor: descriptor >= 0 ? descriptor : AT_FDCWD, prefix: path + "/")
    }

    /// `name` (relative to this directory) as the *at(2) calls take it with
    /// `descriptor`: as it is, or after the path when nothing is open.
    /// Callers hand it over with `withCString`: a name of up to 15 bytes
    /// lives inside its String, and the implicit conversion to a C string
    /// copies such a name to the heap at every call.
    func argument(_ name: String) -> String {
        descriptor == AT_FDCWD && !prefix.isEmpty ? prefix + name : name
    }

    /// `name` as a message names it: the whole path.
    func shown(_ name: String) -> String { prefix + name }

    deinit {
        if descriptor != AT_FDCWD { close(descriptor) }
    }
}
